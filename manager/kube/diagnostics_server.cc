#include "manager/kube/diagnostics_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kSessionTimeout = std::chrono::seconds(10);

} // namespace

struct DiagnosticsServer::Impl {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::jthread thread;
  int port = 0;
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
public:
  Session(tcp::socket socket, DiagnosticsServer& server)
      : stream_(std::move(socket)), server_(server) {}

  void start() { read(); }

private:
  void read() {
    request_ = {};
    stream_.expires_after(kSessionTimeout);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) {
                         self->respond();
                       }
                     });
  }

  void respond() {
    std::string target(request_.target().data(), request_.target().size());
    auto [status, body] = server_.handle(target);
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(status), request_.version());
    response->set(http::field::content_type, absl::StartsWith(target, "/metrics")
                                                 ? "text/plain; version=0.0.4; charset=utf-8"
                                                 : "text/plain; charset=utf-8");
    response->set(http::field::cache_control, "no-store");
    response->keep_alive(request_.keep_alive());
    if (request_.method() != http::verb::head) {
      response->body() = std::move(body);
    }
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (!ec && response->keep_alive()) {
                          self->read();
                        } else {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                        }
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_;
  DiagnosticsServer& server_;
};

void accept(tcp::acceptor& acceptor, DiagnosticsServer& server) {
  acceptor.async_accept([&acceptor, &server](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
      return;
    }
    if (!ec) {
      std::make_shared<Session>(std::move(socket), server)->start();
    }
    accept(acceptor, server);
  });
}

} // namespace

DiagnosticsServer::DiagnosticsServer(std::string address, MetricsRegistry* metrics,
                                     std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>()), address_(std::move(address)), metrics_(metrics),
      logger_(std::move(logger)) {}

DiagnosticsServer::~DiagnosticsServer() {
  stop();
}

void DiagnosticsServer::addCheck(CheckKind kind, std::string name, HealthCheck check) {
  std::lock_guard lock(mu_);
  (kind == CheckKind::kHealthz ? healthz_ : readyz_)
      .emplace_back(std::move(name), std::move(check));
}

absl::Status DiagnosticsServer::start() {
  absl::string_view address = address_;
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("invalid address \"", address_, "\""));
  }
  std::string host(absl::StripSuffix(absl::StripPrefix(address.substr(0, colon), "["), "]"));
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid port in \"", address_, "\""));
  }
  beast::error_code ec;
  auto ip = host.empty() ? asio::ip::address(asio::ip::address_v6::any())
                         : asio::ip::make_address(host, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("invalid host in \"", address_, "\""));
  }
  tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && ip.is_v6() && host.empty()) {
    acceptor.set_option(asio::ip::v6_only(false), ec);
  }
  if (!ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address_, ": ", ec.message()));
  }
  impl_->port = acceptor.local_endpoint().port();
  accept(acceptor, *this);
  impl_->thread = std::jthread([this] { impl_->ioc.run(); });
  logger_->info("serving diagnostics address={} port={}", address_, impl_->port);
  return absl::OkStatus();
}

void DiagnosticsServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) {
    return;
  }
  impl_->ioc.stop();
  impl_->thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

int DiagnosticsServer::port() const {
  return impl_->port;
}

std::pair<int, std::string> DiagnosticsServer::handle(const std::string& target) {
  absl::string_view path = target;
  absl::string_view query;
  if (size_t q = path.find('?'); q != absl::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (path == "/metrics") {
    if (metrics_ == nullptr) {
      return {404, "404 page not found\n"};
    }
    return {200, metrics_->render()};
  }
  std::vector<std::pair<std::string, HealthCheck>> checks;
  absl::string_view endpoint;
  for (absl::string_view candidate : {"/healthz", "/livez", "/readyz"}) {
    if (path == candidate || absl::StartsWith(path, absl::StrCat(candidate, "/"))) {
      endpoint = candidate;
    }
  }
  if (endpoint.empty()) {
    return {404, "404 page not found\n"};
  }
  {
    std::lock_guard lock(mu_);
    checks = endpoint == "/readyz" ? readyz_ : healthz_;
  }
  absl::string_view only = path.substr(endpoint.size());
  absl::ConsumePrefix(&only, "/");
  bool verbose = absl::StrContains(query, "verbose");
  std::string body;
  bool healthy = true;
  bool found = only.empty();
  for (const auto& [name, check] : checks) {
    if (!only.empty() && name != only) {
      continue;
    }
    found = true;
    absl::Status status = check();
    if (status.ok()) {
      absl::StrAppend(&body, "[+]", name, " ok\n");
    } else {
      healthy = false;
      // The reason goes to the log, not to the unauthenticated response.
      absl::StrAppend(&body, "[-]", name, " failed: reason withheld\n");
      logger_->info("health check failed endpoint={} check={} error=\"{}\"", sv(endpoint), name,
                    msg(status));
    }
  }
  if (!found) {
    return {404, "404 page not found\n"};
  }
  if (!healthy) {
    return {500, absl::StrCat(body, endpoint.substr(1), " check failed\n")};
  }
  if (verbose) {
    return {200, absl::StrCat(body, endpoint.substr(1), " check passed\n")};
  }
  return {200, "ok"};
}

} // namespace captf::kube
