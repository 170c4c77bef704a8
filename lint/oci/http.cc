#include "lint/oci/http.h"

#include <array>
#include <cstddef>
#include <limits>
#include <optional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>

#include "absl/strings/ascii.h"
#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::lint::oci {

using contract::strCat;

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

constexpr std::size_t kErrorBodyBytes = std::size_t{64} * 1024;
constexpr std::size_t kChunk = std::size_t{64} * 1024;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string seconds(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 1000 == 0) {
    return strCat(static_cast<int64_t>(ms / 1000), "s");
  }
  return strCat(static_cast<int64_t>(ms), "ms");
}

// Runs one asynchronous operation on `ioc` to completion. The operation's
// own deadline (tcp_stream expiry or a timer) bounds the wait.
template <class Start> beast::error_code runOp(net::io_context& ioc, Start&& start) {
  beast::error_code result;
  bool done = false;
  start([&](beast::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  ioc.restart();
  while (!done && ioc.run_one() > 0) {
  }
  return result;
}

bool isRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

} // namespace

std::string Url::authority() const {
  const std::string h = host.find(':') != std::string::npos ? strCat("[", host, "]") : host;
  return defaultPort() ? h : strCat(h, ":", port);
}

std::string Url::str() const {
  return strCat(scheme, "://", authority(), target);
}

absl::StatusOr<Url> parseUrl(std::string_view text) {
  Url url;
  const std::size_t sep = text.find("://");
  if (sep == std::string_view::npos) {
    return absl::InvalidArgumentError(strCat("\"", text, "\" is not an absolute URL"));
  }
  url.scheme = absl::AsciiStrToLower(std::string(text.substr(0, sep)));
  if (url.scheme != "http" && url.scheme != "https") {
    return absl::InvalidArgumentError(strCat("\"", text, "\": only http and https URLs"));
  }
  std::string_view rest = text.substr(sep + 3);
  const std::size_t path = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path);
  url.target = path == std::string_view::npos ? "/" : std::string(rest.substr(path));
  if (url.target.front() == '?') {
    url.target.insert(0, "/");
  }
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1); // userinfo is never used
  }
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(strCat("\"", text, "\": bad IPv6 host"));
    }
    url.host = std::string(authority.substr(1, close - 1));
    authority = authority.substr(close + 1);
    if (authority.starts_with(':')) {
      url.port = std::string(authority.substr(1));
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      url.port = std::string(authority.substr(colon + 1));
    }
  }
  if (url.host.empty()) {
    return absl::InvalidArgumentError(strCat("\"", text, "\" has no host"));
  }
  if (url.port.empty()) {
    url.port = url.scheme == "https" ? "443" : "80";
  }
  if (!std::all_of(url.port.begin(), url.port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return absl::InvalidArgumentError(strCat("\"", text, "\" has a bad port"));
  }
  return url;
}

absl::StatusOr<Url> resolveUrl(const Url& base, std::string_view location) {
  if (location.find("://") != std::string_view::npos) {
    return parseUrl(location);
  }
  Url out = base;
  if (location.starts_with("//")) {
    return parseUrl(strCat(base.scheme, ":", location));
  }
  if (location.starts_with('/')) {
    out.target = std::string(location);
    return out;
  }
  std::string dir = base.target.substr(0, base.target.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  out.target = strCat(dir, location);
  return out;
}

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, name)) {
      return v;
    }
  }
  return "";
}

std::vector<std::string> HttpResponse::headerValues(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, name)) {
      out.push_back(v);
    }
  }
  return out;
}

struct HttpClient::Impl {
  HttpOptions options;
  ssl::context tls{ssl::context::tls_client};

  explicit Impl(HttpOptions o) : options(o) {
    tls.set_default_verify_paths();
    tls.set_verify_mode(ssl::verify_peer);
  }

  absl::Status failure(const Url& url, std::string_view step, const beast::error_code& ec,
                       std::chrono::milliseconds timeout) const {
    if (ec == beast::error::timeout || ec == net::error::operation_aborted) {
      return absl::DeadlineExceededError(
          strCat("GET ", url.str(), ": ", step, " timed out after ", seconds(timeout)));
    }
    return absl::UnavailableError(strCat("GET ", url.str(), ": ", step, ": ", ec.message()));
  }

  // One request on a new connection. `sink` receives a 2xx body; otherwise
  // (or without a sink) the body is kept up to `keep` bytes.
  template <class Stream>
  absl::StatusOr<HttpResponse> exchange(net::io_context& ioc, Stream& stream, const Url& url,
                                        const Headers& headers, uint64_t max_body,
                                        const std::function<absl::Status(std::string_view)>* sink) {
    http::request<http::empty_body> req{http::verb::get, url.target, 11};
    req.set(http::field::host, url.authority());
    req.set(http::field::user_agent, "tfcapi-lint");
    req.set(http::field::connection, "close");
    for (const auto& [k, v] : headers) {
      req.set(k, v);
    }
    beast::get_lowest_layer(stream).expires_after(options.io_timeout);
    if (auto ec = runOp(ioc, [&](auto h) { http::async_write(stream, req, std::move(h)); }); ec) {
      return failure(url, "sending the request", ec, options.io_timeout);
    }
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    // Our own limit applies below. (Beast 1.74 treats boost::none as a limit
    // of zero for Content-Length bodies, so "no limit" is the largest value.)
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::get_lowest_layer(stream).expires_after(options.io_timeout);
    if (auto ec = runOp(
            ioc, [&](auto h) { http::async_read_header(stream, buffer, parser, std::move(h)); });
        ec) {
      return failure(url, "reading the response", ec, options.io_timeout);
    }
    HttpResponse response;
    response.url = url.str();
    response.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get()) {
      response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    // A 2xx body is the payload (bounded by max_body); any other body is
    // only kept for the error message (the first 64 KiB).
    const bool payload = response.status / 100 == 2;
    const bool streaming = sink != nullptr && payload;
    const uint64_t limit = payload ? max_body : kErrorBodyBytes;
    std::array<char, kChunk> chunk{};
    uint64_t total = 0;
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      beast::get_lowest_layer(stream).expires_after(options.io_timeout);
      beast::error_code ec =
          runOp(ioc, [&](auto h) { http::async_read(stream, buffer, parser, std::move(h)); });
      if (ec == http::error::need_buffer) {
        ec = {};
      }
      if (ec) {
        return failure(url, "reading the response body", ec, options.io_timeout);
      }
      const std::size_t n = chunk.size() - parser.get().body().size;
      total += n;
      if (total > limit) {
        if (!payload) {
          break; // an error body: what we have is enough for the message
        }
        return absl::ResourceExhaustedError(
            strCat("GET ", url.str(), ": the response is larger than ", limit, " bytes"));
      }
      if (streaming) {
        CAPTF_RETURN_IF_ERROR((*sink)(std::string_view(chunk.data(), n)));
      } else {
        response.body.append(chunk.data(), n);
      }
    }
    beast::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
    return response;
  }

  absl::StatusOr<HttpResponse> once(const Url& url, const Headers& headers, uint64_t max_body,
                                    const std::function<absl::Status(std::string_view)>* sink) {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    net::steady_timer timer(ioc);
    timer.expires_after(options.connect_timeout);
    timer.async_wait([&resolver](const beast::error_code& ec) {
      if (!ec) {
        resolver.cancel();
      }
    });
    tcp::resolver::results_type endpoints;
    beast::error_code ec = runOp(ioc, [&](auto h) {
      resolver.async_resolve(url.host, url.port,
                             [&endpoints, h = std::move(h)](const beast::error_code& e,
                                                            tcp::resolver::results_type r) mutable {
                               endpoints = std::move(r);
                               h(e);
                             });
    });
    timer.cancel();
    if (ec) {
      return failure(url, strCat("resolving ", url.host), ec, options.connect_timeout);
    }
    if (url.scheme == "http") {
      beast::tcp_stream stream(ioc);
      stream.expires_after(options.connect_timeout);
      if (ec = runOp(ioc, [&](auto h) { stream.async_connect(endpoints, std::move(h)); }); ec) {
        return failure(url, "connect", ec, options.connect_timeout);
      }
      return exchange(ioc, stream, url, headers, max_body, sink);
    }
    beast::ssl_stream<beast::tcp_stream> stream(ioc, tls);
    beast::get_lowest_layer(stream).expires_after(options.connect_timeout);
    if (ec = runOp(ioc,
                   [&](auto h) {
                     beast::get_lowest_layer(stream).async_connect(endpoints, std::move(h));
                   });
        ec) {
      return failure(url, "connect", ec, options.connect_timeout);
    }
    beast::error_code ip_ec;
    net::ip::make_address(url.host, ip_ec);
    if (ip_ec) { // SNI only for names
      SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(url.host.c_str()));
    }
    stream.set_verify_callback(ssl::host_name_verification(url.host));
    beast::get_lowest_layer(stream).expires_after(options.connect_timeout);
    if (ec = runOp(ioc,
                   [&](auto h) { stream.async_handshake(ssl::stream_base::client, std::move(h)); });
        ec) {
      return failure(url, "TLS handshake", ec, options.connect_timeout);
    }
    return exchange(ioc, stream, url, headers, max_body, sink);
  }

  absl::StatusOr<HttpResponse> follow(std::string_view text, Headers headers, uint64_t max_body,
                                      const std::function<absl::Status(std::string_view)>* sink,
                                      const UrlCheck& check) {
    CAPTF_ASSIGN_OR_RETURN(Url url, parseUrl(text));
    for (int hop = 0;; ++hop) {
      if (check) {
        CAPTF_RETURN_IF_ERROR(check(url));
      }
      CAPTF_ASSIGN_OR_RETURN(HttpResponse response, once(url, headers, max_body, sink));
      const std::string location = response.header("Location");
      if (!isRedirect(response.status) || location.empty()) {
        return response;
      }
      if (hop >= options.max_redirects) {
        return absl::UnavailableError(
            strCat("GET ", text, ": more than ", options.max_redirects, " redirects"));
      }
      CAPTF_ASSIGN_OR_RETURN(Url next, resolveUrl(url, location));
      if (next.host != url.host || next.port != url.port || next.scheme != url.scheme) {
        std::erase_if(headers,
                      [](const auto& h) { return equalsIgnoreCase(h.first, "Authorization"); });
      }
      url = std::move(next);
    }
  }
};

HttpClient::HttpClient(HttpOptions options) : impl_(std::make_unique<Impl>(options)) {}
HttpClient::~HttpClient() = default;

absl::StatusOr<HttpResponse> HttpClient::get(std::string_view url, const Headers& headers,
                                             uint64_t max_body, const UrlCheck& check) {
  return impl_->follow(url, headers, max_body, nullptr, check);
}

absl::StatusOr<HttpResponse>
HttpClient::download(std::string_view url, const Headers& headers, uint64_t max_body,
                     const std::function<absl::Status(std::string_view)>& sink) {
  return impl_->follow(url, headers, max_body, &sink, {});
}

} // namespace captf::lint::oci
