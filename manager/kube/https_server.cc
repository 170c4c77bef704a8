#include "manager/kube/https_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "manager/kube/certificates.h"

namespace captf::kube {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using PlainStream = beast::tcp_stream;

constexpr std::size_t kMaxHeaderBytes = std::size_t{64} * 1024U;
constexpr std::chrono::seconds kShutdownTimeout{2};

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') {
    return dir + name;
  }
  return dir + "/" + name;
}

} // namespace

std::string failureStatusJson(int code, std::string_view reason, std::string_view message) {
  nlohmann::json doc = {{"apiVersion", "v1"},
                        {"kind", "Status"},
                        {"status", "Failure"},
                        {"reason", std::string(reason)},
                        {"message", std::string(message)},
                        {"code", code}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct HttpsServer::Impl {
  Impl(ServerOptions opts, HttpHandler h, std::shared_ptr<spdlog::logger> log, MayBlock blocks)
      : options(std::move(opts)), handler(std::move(h)), may_block(std::move(blocks)),
        logger(std::move(log)),
        certs(joinPath(options.cert_dir, options.cert_name),
              joinPath(options.cert_dir, options.key_name), options.tls, logger),
        ioc(std::max(1, options.io_threads)) {}

  [[nodiscard]] bool tls() const { return options.transport == Transport::kTls; }
  void accept();
  void reloadLoop(std::stop_token stop);
  absl::Status loadCertificate();

  ServerOptions options;
  const HttpHandler handler;
  const MayBlock may_block;
  std::shared_ptr<spdlog::logger> logger;
  CertificateReloader certs;

  net::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::thread_pool> handler_pool;
  std::vector<std::jthread> io_threads;
  std::jthread reloader;
  std::mutex reload_mu;
  std::condition_variable_any reload_cv;
  std::atomic<bool> serving{false};
  std::atomic<uint16_t> port{0};
  bool self_signed = false;
  bool stopped = false;
};

namespace {

// One connection, over TLS (TlsStream) or plain TCP (PlainStream).
template <class Stream> class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> ctx, HttpsServer::Impl& server)
    requires kTls
      : ctx_(std::move(ctx)), stream_(std::move(socket), *ctx_), server_(server) {}
  Session(tcp::socket&& socket, HttpsServer::Impl& server)
    requires(!kTls)
      : stream_(std::move(socket)), server_(server) {}

  void run() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(self->server_.options.request_timeout);
        self->stream_.async_handshake(ssl::stream_base::server,
                                      [self](beast::error_code ec) { self->onHandshake(ec); });
      } else {
        self->readHeader();
      }
    });
  }

private:
  void onHandshake(beast::error_code ec) {
    if (ec) {
      server_.logger->debug("{} TLS handshake failed error={}", server_.options.name, ec.message());
      return;
    }
    readHeader();
  }

  void readHeader() {
    // A Beast parser reads one message; each request gets a new one.
    parser_ = std::make_unique<http::request_parser<http::string_body>>();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(server_.options.max_body_bytes);
    beast::get_lowest_layer(stream_).expires_after(server_.options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              self->onHeader(ec);
                            });
  }

  void onHeader(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      close();
      return;
    }
    deadline_ = SteadyClock::now() + server_.options.request_timeout;
    // The parser checks a Content-Length against the body limit as soon as
    // the header is complete.
    if (ec == http::error::body_limit) {
      tooLarge();
      return;
    }
    if (ec) {
      return; // timeout of an idle connection, or a broken one
    }
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    const auto length = parser_->content_length();
    if (length && *length > server_.options.max_body_bytes) {
      tooLarge();
      return;
    }
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code read_ec, std::size_t) {
                       self->onRead(read_ec);
                     });
  }

  void tooLarge() {
    HttpReply reply{413, "application/json",
                    failureStatusJson(413, "RequestEntityTooLarge",
                                      fmt::format("the request body is larger than {} bytes",
                                                  server_.options.max_body_bytes))};
    write(std::move(reply), 11, false);
  }

  void onRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      tooLarge();
      return;
    }
    if (ec) {
      return;
    }
    auto req = std::make_shared<http::request<http::string_body>>(parser_->release());
    const bool keep_alive = req->keep_alive();
    const unsigned version = req->version();
    const auto view = [](beast::string_view v) { return std::string_view(v.data(), v.size()); };
    const auto handle = [this, view](const http::request<http::string_body>& r) {
      return server_.handler(IncomingRequest{view(r.method_string()), view(r.target()),
                                             view(r[http::field::authorization]), r.body()});
    };
    if (!server_.may_block || !server_.may_block(view(req->target())) || !server_.handler_pool) {
      write(handle(*req), version, keep_alive);
      return;
    }
    // The handler may block on the API server: run it off the I/O threads,
    // then write on this connection's strand.
    net::post(*server_.handler_pool,
              [self = this->shared_from_this(), req, keep_alive, version, handle] {
                HttpReply reply = handle(*req);
                net::post(self->stream_.get_executor(),
                          [self, reply = std::move(reply), keep_alive, version]() mutable {
                            self->write(std::move(reply), version, keep_alive);
                          });
              });
  }

  void write(HttpReply reply, unsigned version, bool keep_alive) {
    if (SteadyClock::now() >= deadline_) {
      server_.logger->warn("{} request exceeded its deadline; closing the connection timeout_ms={}",
                           server_.options.name, server_.options.request_timeout.count());
      return;
    }
    res_ = http::response<http::string_body>{};
    res_.version(version);
    res_.result(static_cast<http::status>(reply.status));
    res_.set(http::field::content_type, reply.content_type);
    for (const auto& [field, value] : server_.options.response_headers) {
      res_.set(field, value);
    }
    res_.keep_alive(keep_alive);
    res_.body() = std::move(reply.body);
    res_.prepare_payload();
    const bool unread_body = reply.status == 413;
    const bool close_after = !keep_alive || unread_body;
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    http::async_write(stream_, res_,
                      [self = this->shared_from_this(), close_after,
                       unread_body](beast::error_code ec, std::size_t) {
                        if (ec) {
                          return;
                        }
                        if (unread_body) {
                          self->drain();
                        } else if (close_after) {
                          self->close();
                        } else {
                          self->readHeader();
                        }
                      });
  }

  // After a 413 the client may still be sending the body. Closing now
  // would make the kernel reset the connection and the client could lose
  // the answer, so read and discard until the client closes (or a short
  // timeout), as HTTP servers' lingering close does.
  void drain() {
    beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
    stream_.async_read_some(net::buffer(drain_buffer_),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) {
                                self->drain();
                              }
                            });
  }

  void close() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  // The context outlives the stream made from it (null in plain HTTP).
  std::shared_ptr<ssl::context> ctx_;
  Stream stream_;
  HttpsServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::unique_ptr<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  SteadyClock::time_point deadline_;
  std::array<char, 16384> drain_buffer_{};
};

} // namespace

void HttpsServer::Impl::accept() {
  if (!acceptor) {
    return; // closed
  }
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != net::error::operation_aborted) {
        logger->warn("{} accept failed error={}", options.name, ec.message());
        accept();
      }
      return;
    }
    if (tls()) {
      auto ctx = std::static_pointer_cast<ssl::context>(certs.current());
      std::make_shared<Session<TlsStream>>(std::move(socket), std::move(ctx), *this)->run();
    } else {
      std::make_shared<Session<PlainStream>>(std::move(socket), *this)->run();
    }
    accept();
  });
}

void HttpsServer::Impl::reloadLoop(std::stop_token stop) {
  std::string last_error;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(reload_mu);
      reload_cv.wait_for(lock, stop, options.reload_interval, [] { return false; });
    }
    if (stop.stop_requested()) {
      return;
    }
    absl::StatusOr<bool> changed = certs.reload();
    if (!changed.ok()) {
      const std::string message(changed.status().message());
      if (message != last_error) {
        logger->warn("cannot reload the {} serving certificate; keeping the current one "
                     "error={}",
                     options.name, message);
        last_error = message;
      }
      continue;
    }
    last_error.clear();
    if (*changed) {
      logger->info("{} serving certificate reloaded generation={}", options.name,
                   certs.generation());
    }
  }
}

absl::Status HttpsServer::Impl::loadCertificate() {
  std::error_code exists_ec;
  const bool no_files =
      !std::filesystem::exists(joinPath(options.cert_dir, options.cert_name), exists_ec) &&
      !std::filesystem::exists(joinPath(options.cert_dir, options.key_name), exists_ec);
  if (no_files && options.missing_certificate == MissingCertificate::kSelfSigned) {
    // As controller-runtime's metrics server: no mounted pair at start, a
    // generated one for the life of the process.
    absl::StatusOr<PemPair> pair = selfSignedPair("localhost");
    if (!pair.ok()) {
      return pair.status();
    }
    if (absl::Status installed = certs.install(pair->cert_pem, pair->key_pem); !installed.ok()) {
      return installed;
    }
    self_signed = true;
    logger->info("no {} serving certificate found; serving a self-signed certificate generated "
                 "at startup cert_dir={}",
                 options.name, options.cert_dir);
  } else if (absl::StatusOr<bool> loaded = certs.reload(); !loaded.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("cannot load the {} serving certificate from {}: {}", options.name,
                    options.cert_dir, std::string(loaded.status().message())));
  }
  return absl::OkStatus();
}

HttpsServer::HttpsServer(ServerOptions options, HttpHandler handler,
                         std::shared_ptr<spdlog::logger> logger, MayBlock may_block)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(logger),
                                   std::move(may_block))) {}

HttpsServer::~HttpsServer() {
  stop();
}

absl::Status HttpsServer::start() {
  Impl& s = *impl_;
  const std::string& name = s.options.name;
  if (s.tls()) {
    if (absl::Status loaded = s.loadCertificate(); !loaded.ok()) {
      return loaded;
    }
  }
  beast::error_code ec;
  // No address: every interface, through one dual-stack IPv6 socket.
  const bool any = s.options.address.empty();
  const net::ip::address address = any ? net::ip::address(net::ip::address_v6::any())
                                       : net::ip::make_address(s.options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("invalid {} bind address {}: {}", name, s.options.address, ec.message()));
  }
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.emplace(s.ioc);
  if (s.acceptor->open(endpoint.protocol(), ec); ec) {
    return absl::UnavailableError(fmt::format("cannot open the {} socket: {}", name, ec.message()));
  }
  if (any) {
    if (s.acceptor->set_option(net::ip::v6_only(false), ec); ec) {
      return absl::UnavailableError(
          fmt::format("cannot make the {} socket dual-stack: {}", name, ec.message()));
    }
  }
  s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (s.acceptor->bind(endpoint, ec); ec) {
    return absl::UnavailableError(fmt::format("cannot bind the {} server to {}:{}: {}", name,
                                              s.options.address, s.options.port, ec.message()));
  }
  if (s.acceptor->listen(net::socket_base::max_listen_connections, ec); ec) {
    return absl::UnavailableError(fmt::format("cannot listen: {}", ec.message()));
  }
  s.port = s.acceptor->local_endpoint().port();
  s.handler_pool.emplace(static_cast<std::size_t>(std::max(1, s.options.handler_threads)));
  s.accept();
  for (int i = 0; i < std::max(1, s.options.io_threads); ++i) {
    s.io_threads.emplace_back([&s] { s.ioc.run(); });
  }
  if (s.tls() && !s.self_signed) {
    s.reloader = std::jthread([&s](std::stop_token stop) { s.reloadLoop(stop); });
  }
  s.serving = true;
  if (s.tls()) {
    s.logger->info("{} server listening address={} port={} cert_dir={}", name, s.options.address,
                   s.port.load(), s.options.cert_dir);
  } else {
    s.logger->info("{} server listening over plain HTTP address={} port={}", name,
                   s.options.address, s.port.load());
  }
  return absl::OkStatus();
}

void HttpsServer::stop() {
  Impl& s = *impl_;
  if (s.stopped || !s.acceptor) {
    return;
  }
  s.stopped = true;
  s.serving = false;
  s.reloader.request_stop();
  s.reload_cv.notify_all();
  if (s.reloader.joinable()) {
    s.reloader.join();
  }
  s.ioc.stop();
  s.io_threads.clear(); // joins
  // Requests still being handled finish; their writes land in the stopped
  // io_context and are discarded with their sessions.
  if (s.handler_pool) {
    s.handler_pool->stop();
    s.handler_pool->join();
  }
  beast::error_code ec;
  s.acceptor->close(ec);
  s.logger->info("{} server stopped", s.options.name);
}

uint16_t HttpsServer::port() const {
  return impl_->port.load();
}

absl::Status HttpsServer::ready() const {
  if (!impl_->serving.load()) {
    return absl::UnavailableError(fmt::format("the {} server is not serving", impl_->options.name));
  }
  if (impl_->tls() && impl_->certs.current() == nullptr) {
    return absl::UnavailableError(
        fmt::format("the {} serving certificate is not loaded", impl_->options.name));
  }
  return absl::OkStatus();
}

int HttpsServer::certificateGeneration() const {
  return impl_->certs.generation();
}

bool HttpsServer::selfSigned() const {
  return impl_->self_signed;
}

} // namespace captf::kube
