#include "test/webhooks/https_client.h"

#include <optional>

#include <arpa/inet.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

namespace captf::webhooks::testing {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

} // namespace

struct HttpsClient::Impl {
  std::string host;
  int port = 0;
  net::io_context ioc;
  ssl::context ctx{ssl::context::tls_client};
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream;
  beast::flat_buffer buffer;
  long serial = -1;
  bool self_signed = false;
  bool verify = true;
  std::string token;
};

HttpsClient::HttpsClient(std::string host, int port, std::string ca_pem, bool max_tls12)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = port;
  impl_->verify = !ca_pem.empty();
  if (impl_->verify) {
    impl_->ctx.add_certificate_authority(net::buffer(ca_pem));
    impl_->ctx.set_verify_mode(ssl::verify_peer);
  } else {
    impl_->ctx.set_verify_mode(ssl::verify_none);
  }
  if (max_tls12) {
    SSL_CTX_set_max_proto_version(impl_->ctx.native_handle(), TLS1_2_VERSION);
  }
}

HttpsClient::~HttpsClient() = default;

void HttpsClient::offerGroups(const std::string& list) {
  SSL_CTX_set1_groups_list(impl_->ctx.native_handle(), list.c_str());
}

absl::Status HttpsClient::connect() {
  if (impl_->stream) {
    return absl::OkStatus();
  }
  impl_->stream.emplace(impl_->ioc, impl_->ctx);
  impl_->buffer.clear();
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  auto endpoints = resolver.resolve(impl_->host, std::to_string(impl_->port), ec);
  if (ec) {
    impl_->stream.reset();
    return absl::UnavailableError(ec.message());
  }
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(10));
  beast::get_lowest_layer(*impl_->stream).connect(endpoints, ec);
  if (!ec) {
    if (impl_->verify) {
      impl_->stream->set_verify_callback(ssl::host_name_verification(impl_->host));
    }
    impl_->stream->handshake(ssl::stream_base::client, ec);
  }
  if (ec) {
    impl_->stream.reset();
    return absl::UnavailableError(fmt::format("connect: {}", ec.message()));
  }
  X509* peer = SSL_get1_peer_certificate(impl_->stream->native_handle());
  if (peer != nullptr) {
    impl_->serial = ASN1_INTEGER_get(X509_get_serialNumber(peer));
    impl_->self_signed =
        X509_NAME_cmp(X509_get_issuer_name(peer), X509_get_subject_name(peer)) == 0 &&
        X509_verify(peer, X509_get0_pubkey(peer)) == 1;
    X509_free(peer);
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpsReply> HttpsClient::send(const std::string& method, const std::string& target,
                                             const std::string& body) {
  if (absl::Status s = connect(); !s.ok()) {
    return s;
  }
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, impl_->host);
  req.set(http::field::content_type, "application/json");
  if (!impl_->token.empty()) {
    req.set(http::field::authorization, "Bearer " + impl_->token);
  }
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  beast::get_lowest_layer(*impl_->stream).expires_after(std::chrono::seconds(15));
  http::write(*impl_->stream, req, ec);
  http::response<http::string_body> res;
  if (!ec) {
    http::read(*impl_->stream, impl_->buffer, res, ec);
  }
  if (ec) {
    impl_->stream.reset();
    return absl::UnavailableError(fmt::format("{} {}: {}", method, target, ec.message()));
  }
  HttpsReply reply{static_cast<int>(res.result_int()), res.body(), res.keep_alive()};
  if (!reply.keep_alive) {
    close();
  }
  return reply;
}

absl::StatusOr<HttpsReply> HttpsClient::post(const std::string& target, const std::string& body) {
  return send("POST", target, body);
}

absl::StatusOr<HttpsReply> HttpsClient::get(const std::string& target) {
  return send("GET", target, "");
}

absl::StatusOr<HttpsReply> HttpsClient::put(const std::string& target, const std::string& body) {
  return send("PUT", target, body);
}

void HttpsClient::setBearerToken(std::string token) {
  impl_->token = std::move(token);
}

bool HttpsClient::peerSelfSigned() const {
  return impl_->self_signed;
}

long HttpsClient::peerSerial() const {
  return impl_->serial;
}

void HttpsClient::close() {
  if (impl_->stream) {
    beast::error_code ec;
    beast::get_lowest_layer(*impl_->stream).close();
    impl_->stream.reset();
  }
}

std::string admissionReview(const std::string& uid, const std::string& kind,
                            const std::string& object_json) {
  return fmt::format(
      R"({{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"{}",)"
      R"("kind":{{"group":"infrastructure.cluster.x-k8s.io","version":"v1alpha1","kind":"{}"}},)"
      R"("resource":{{"group":"infrastructure.cluster.x-k8s.io","version":"v1alpha1","resource":"x"}},)"
      R"("operation":"CREATE","userInfo":{{"username":"admin","groups":["system:masters"]}},)"
      R"("object":{}}}}})",
      uid, kind, object_json);
}

std::string plainExchange(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return "";
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    // Nothing more to send: a server draining an unread body sees the end.
    ::shutdown(fd, SHUT_WR);
    char buffer[512];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) {
      response.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return response;
}

} // namespace captf::webhooks::testing
