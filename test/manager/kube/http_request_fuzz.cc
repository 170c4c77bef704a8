// libFuzzer target for the HTTP/1.1 request framing of kube::HttpsServer
// (the webhooks, the diagnostics endpoint, the probes): the bytes a client
// sends on a connection, after TLS. Each request is read with the parser
// the server makes (kube::newRequestParser, manager/kube/request_parser.h)
// and the same steps as the server's session: the headers (read_header),
// then a Content-Length over the body limit is a 413, then the body (read),
// then the next request of a keep-alive connection from what is left in
// the buffer. The first byte picks the body limit (the server's 3 MiB, or
// a small one so that the 413 paths are reached) and the size of each read
// (one byte, a few, the server's first read of 4096, or 64 KiB). Invariants:
//   - no crash, leak or undefined behaviour;
//   - a request handed on has a body within the limit and a start line and
//     Authorization header within the header limit;
//   - the connection's buffer stays within the header limit plus the body
//     limit plus one read;
//   - the error texts never quote the bytes (test/fuzz_check.h's canary).
// Inputs go up to 131072 bytes, twice the header limit, so that an over-long
// header and two pipelined requests of the largest header fit
// (LLVMFuzzerInitialize sets -max_len unless given one). Run:
//   build/fuzz/test/manager/kube_http_request_fuzz -max_total_time=600
//       /tmp/http-corpus test/manager/kube/fuzz/http_corpus
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/system/system_error.hpp>

#include "manager/kube/request_parser.h"
#include "test/fuzz_check.h"

namespace {

namespace http = boost::beast::http;
using captf::fuzz::check;
using captf::fuzz::checkNoCanary;

constexpr std::size_t kServerBodyLimit = std::size_t{3} * 1024U * 1024U; // ServerOptions
constexpr std::array<std::size_t, 4> kBodyLimits = {kServerBodyLimit, 0, 16, 4096};
constexpr std::array<std::size_t, 4> kReadSizes = {1, 7, 4096, 65536};

// A connection's bytes as a synchronous stream that returns at most
// `chunk` bytes a read, then end of file.
class ChunkStream {
public:
  ChunkStream(std::string_view bytes, std::size_t chunk) : rest_(bytes), chunk_(chunk) {}

  template <class MutableBuffers>
  // NOLINTNEXTLINE(readability-identifier-naming): the name Beast's streams have.
  std::size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
    if (rest_.empty()) {
      ec = boost::asio::error::eof;
      return 0;
    }
    const std::size_t n = boost::asio::buffer_copy(
        buffers, boost::asio::buffer(rest_.data(), std::min(chunk_, rest_.size())));
    rest_.remove_prefix(n);
    ec = {};
    return n;
  }

  // NOLINTNEXTLINE(readability-identifier-naming): the name Beast's streams have.
  template <class MutableBuffers> std::size_t read_some(const MutableBuffers& buffers) {
    boost::system::error_code ec;
    const std::size_t n = read_some(buffers, ec);
    if (ec) {
      throw boost::system::system_error(ec);
    }
    return n;
  }

private:
  std::string_view rest_;
  std::size_t chunk_;
};

void checkError(const boost::system::error_code& ec) {
  checkNoCanary(ec.message(), "a framing error");
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=131072.
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, 131072);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::size_t body_limit = kBodyLimits[data[0] % kBodyLimits.size()];
  const std::size_t read_size = kReadSizes[(data[0] / kBodyLimits.size()) % kReadSizes.size()];
  ChunkStream stream(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                     read_size);
  boost::beast::flat_buffer buffer;
  const std::size_t max_buffered = captf::kube::kMaxRequestHeaderBytes + body_limit + 65536;
  // The server's session: one parser per request until the connection ends.
  while (true) {
    auto parser = captf::kube::newRequestParser(body_limit);
    boost::system::error_code ec;
    http::read_header(stream, buffer, *parser, ec);
    check(buffer.size() <= max_buffered, "the buffer stays bounded while reading headers");
    checkError(ec);
    if (ec == http::error::end_of_stream || (ec && ec != http::error::body_limit)) {
      return 0; // the connection closes
    }
    if (ec == http::error::body_limit) {
      return 0; // 413, then the connection closes
    }
    if (const auto length = parser->content_length(); length && *length > body_limit) {
      return 0; // 413
    }
    http::read(stream, buffer, *parser, ec);
    check(buffer.size() <= max_buffered, "the buffer stays bounded while reading a body");
    checkError(ec);
    if (ec) {
      return 0; // a 413, or the connection closes
    }
    check(parser->is_done(), "a request read without error is complete");
    const http::request<http::string_body> request = parser->release();
    check(request.body().size() <= body_limit, "the body is within the limit");
    const std::size_t header_bytes = request.method_string().size() + request.target().size() +
                                     request[http::field::authorization].size();
    check(header_bytes <= captf::kube::kMaxRequestHeaderBytes,
          "the start line and Authorization are within the header limit");
    if (!request.keep_alive()) {
      return 0;
    }
  }
}
