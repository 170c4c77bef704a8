#include "manager/kube/https_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <list>
#include <memory>
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
#include <openssl/ssl.h>

#include "manager/kube/certificates.h"
#include "manager/kube/request_parser.h"

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

constexpr std::chrono::seconds kShutdownTimeout{2};
// What one read takes while waiting for the first byte of the next request.
constexpr std::size_t kFirstReadBytes = 4096;
// At most one warning this often while the connection cap is being hit.
constexpr std::chrono::seconds kCapLogInterval{10};

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

namespace https_server_detail {

// A connection as the cap on open connections sees it
// (docs/decisions/webhooks-server.md#bounds). Its slot belongs to the
// ConnectionTable and is read and written only under the table's lock.
class Connection {
public:
  enum class Phase {
    kUnserved, // handshake and first request's headers
    kBusy,     // headers received, until the answer is written
    kIdle,     // waiting for (or reading the headers of) a later request
    kClosing,  // closing (TLS shutdown, or draining after a 413)
  };
  struct Slot {
    Phase phase = Phase::kUnserved;
    bool counted = false;
    std::list<Connection*>::iterator pos;
  };

  Connection() = default;
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The connection, or null when it is being destroyed. Called under the
  // table's lock: it must not drop the last reference there.
  virtual std::shared_ptr<Connection> share() = 0;
  // Closes the socket, on the connection's strand (posts; never runs
  // inline). Called without the table's lock.
  virtual void evict() = 0;

  Slot slot;
};

// The open connections, by phase, each list oldest first. Thread-safe.
class ConnectionTable {
public:
  using Phase = Connection::Phase;
  enum class Admission { kAdmitted, kAdmittedClosingAnother, kRefused };
  struct Admitted {
    Admission admission = Admission::kAdmitted;
    // To evict() once the lock is released (null when it was being
    // destroyed: that closes it).
    std::shared_ptr<Connection> victim;
  };

  explicit ConnectionTable(std::size_t max) : max_(std::max<std::size_t>(1, max)) {}

  // Counts `c` as open and unserved. At the cap, first closes the oldest
  // connection that is unserved or closing, else the oldest idle one; when
  // every open connection is in a request, `c` is not counted (kRefused)
  // and the caller closes it. The caller evicts the victim, and drops it,
  // after the call: a session destroyed under the lock would deadlock in
  // release().
  [[nodiscard]] Admitted admit(Connection& c) {
    std::scoped_lock lock(mu_);
    Admitted admitted;
    if (open_ >= max_) {
      std::list<Connection*>& victims = !first_.empty() ? first_ : next_;
      if (victims.empty()) {
        admitted.admission = Admission::kRefused;
        return admitted;
      }
      Connection& victim = *victims.front();
      victims.erase(victim.slot.pos);
      victim.slot.counted = false;
      --open_;
      admitted.admission = Admission::kAdmittedClosingAnother;
      admitted.victim = victim.share();
    }
    first_.push_back(&c);
    c.slot = {Phase::kUnserved, true, std::prev(first_.end())};
    ++open_;
    return admitted;
  }

  // Moves `c` to `phase`; false when it was evicted (its socket is being
  // closed: the caller stops).
  bool enter(Connection& c, Phase phase) {
    std::scoped_lock lock(mu_);
    if (!c.slot.counted) {
      return false;
    }
    std::list<Connection*>& from = listOf(c.slot.phase);
    std::list<Connection*>& to = listOf(phase);
    to.splice(to.end(), from, c.slot.pos);
    c.slot.phase = phase;
    return true;
  }

  // `c` is being destroyed.
  void release(Connection& c) {
    std::scoped_lock lock(mu_);
    if (c.slot.counted) {
      listOf(c.slot.phase).erase(c.slot.pos);
      c.slot.counted = false;
      --open_;
    }
  }

  [[nodiscard]] std::size_t open() const {
    std::scoped_lock lock(mu_);
    return open_;
  }
  [[nodiscard]] std::size_t max() const { return max_; }

private:
  std::list<Connection*>& listOf(Phase phase) {
    switch (phase) {
    case Phase::kUnserved:
    case Phase::kClosing:
      return first_;
    case Phase::kIdle:
      return next_;
    case Phase::kBusy:
      break;
    }
    return busy_;
  }

  const std::size_t max_;
  mutable std::mutex mu_;
  std::size_t open_ = 0;
  std::list<Connection*> first_; // closed first at the cap
  std::list<Connection*> next_;  // then these
  std::list<Connection*> busy_;  // never
};

} // namespace https_server_detail

struct HttpsServer::Impl {
  Impl(ServerOptions opts, HttpHandler h, std::shared_ptr<spdlog::logger> log, MayBlock blocks)
      : options(std::move(opts)), handler(std::move(h)), may_block(std::move(blocks)),
        logger(std::move(log)),
        certs(joinPath(options.cert_dir, options.cert_name),
              joinPath(options.cert_dir, options.key_name), options.tls, logger),
        connections(options.max_connections), ioc(std::max(1, options.io_threads)) {}

  [[nodiscard]] bool tls() const { return options.transport == Transport::kTls; }
  void accept();
  void onCapReached(https_server_detail::ConnectionTable::Admission admission);
  void reloadLoop(std::stop_token stop);
  absl::Status loadCertificate();

  ServerOptions options;
  const HttpHandler handler;
  const MayBlock may_block;
  std::shared_ptr<spdlog::logger> logger;
  CertificateReloader certs;
  // Before ioc: the sessions its handlers hold leave the table when the
  // io_context is destroyed.
  https_server_detail::ConnectionTable connections;
  // The accept handler's (accepts are serial): cap warnings, throttled.
  SteadyClock::time_point cap_logged_at{};
  std::size_t cap_closed = 0;
  std::size_t cap_refused = 0;

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
using https_server_detail::Connection;
using Phase = Connection::Phase;

template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> ctx, HttpsServer::Impl& server)
    requires kTls
      : ctx_(std::move(ctx)), stream_(std::move(socket), *ctx_), server_(server),
        header_deadline_(SteadyClock::now() + server.options.header_timeout) {
    // OpenSSL frees a connection's record buffers while it has nothing in
    // flight: most of a waiting connection's memory (docs/decisions/webhooks-server.md#bounds).
    SSL_set_mode(stream_.native_handle(), SSL_MODE_RELEASE_BUFFERS);
  }
  Session(tcp::socket&& socket, HttpsServer::Impl& server)
    requires(!kTls)
      : stream_(std::move(socket)), server_(server),
        header_deadline_(SteadyClock::now() + server.options.header_timeout) {}
  ~Session() override { server_.connections.release(*this); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Precondition: admitted to server.connections.
  void run() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        // The handshake and the first request's headers share one deadline
        // from accept (docs/decisions/webhooks-server.md#bounds).
        beast::get_lowest_layer(self->stream_).expires_at(self->header_deadline_);
        self->stream_.async_handshake(ssl::stream_base::server,
                                      [self](beast::error_code ec) { self->onHandshake(ec); });
      } else {
        self->readHeader();
      }
    });
  }

  std::shared_ptr<Connection> share() override { return this->weak_from_this().lock(); }

  void evict() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      // Cancels the pending operation; the session ends with it.
      beast::get_lowest_layer(self->stream_).close();
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

  // Reads the headers of the next request until header_deadline_.
  void readHeader() {
    // A Beast parser reads one message; each request gets a new one.
    parser_ = newRequestParser(server_.options.max_body_bytes);
    beast::get_lowest_layer(stream_).expires_at(header_deadline_);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              self->onHeader(ec);
                            });
  }

  // After an answer on a keep-alive connection: the idle timeout until the
  // next request's first byte, then the header timeout from that byte.
  void awaitRequest() {
    if (!server_.connections.enter(*this, Phase::kIdle)) {
      return;
    }
    if (buffer_.size() > 0) { // pipelined: its first bytes are here
      header_deadline_ = SteadyClock::now() + server_.options.header_timeout;
      readHeader();
      return;
    }
    beast::get_lowest_layer(stream_).expires_after(server_.options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->buffer_.commit(n);
                              if (ec == net::error::eof) {
                                self->close();
                                return;
                              }
                              if (ec) {
                                return; // idle timeout, or a broken connection
                              }
                              self->header_deadline_ =
                                  SteadyClock::now() + self->server_.options.header_timeout;
                              self->readHeader();
                            });
  }

  void onHeader(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      close();
      return;
    }
    if (ec == beast::error::timeout) {
      server_.logger->debug("{} closing a connection whose request headers did not arrive in "
                            "time header_timeout_ms={}",
                            server_.options.name, server_.options.header_timeout.count());
      return;
    }
    // The parser checks a Content-Length against the body limit as soon as
    // the header is complete.
    if (ec && ec != http::error::body_limit) {
      return; // a broken connection
    }
    if (!server_.connections.enter(*this, Phase::kBusy)) {
      return; // closed for a new connection at the cap
    }
    deadline_ = SteadyClock::now() + server_.options.request_timeout;
    if (ec == http::error::body_limit) {
      tooLarge();
      return;
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
                          if (self->server_.connections.enter(*self, Phase::kClosing)) {
                            beast::get_lowest_layer(self->stream_).expires_after(kShutdownTimeout);
                            self->drain();
                          }
                        } else if (close_after) {
                          self->close();
                        } else {
                          self->awaitRequest();
                        }
                      });
  }

  // After a 413 the client may still be sending the body. Closing now
  // would make the kernel reset the connection and the client could lose
  // the answer, so read and discard until the client closes (or a short
  // timeout, one for the whole drain), as HTTP servers' lingering close
  // does.
  void drain() {
    if (!drain_buffer_) {
      drain_buffer_ = std::make_unique<std::array<char, 16384>>();
    }
    stream_.async_read_some(net::buffer(*drain_buffer_),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) {
                                self->drain();
                              }
                            });
  }

  void close() {
    if (!server_.connections.enter(*this, Phase::kClosing)) {
      return;
    }
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
  std::unique_ptr<RequestParser> parser_;
  http::response<http::string_body> res_;
  // The end of the current request's headers at the latest.
  SteadyClock::time_point header_deadline_;
  // The end of the current request's answer at the latest.
  SteadyClock::time_point deadline_;
  // Allocated by the first drain(): few connections ever need it.
  std::unique_ptr<std::array<char, 16384>> drain_buffer_;
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
    // Admitted before it is run, so that the cap holds from the first byte.
    const auto admit_and_run = [this](const auto& session) {
      using Admission = https_server_detail::ConnectionTable::Admission;
      const auto admitted = connections.admit(*session);
      if (admitted.victim) {
        admitted.victim->evict();
      }
      if (admitted.admission != Admission::kAdmitted) {
        onCapReached(admitted.admission);
      }
      if (admitted.admission != Admission::kRefused) {
        session->run();
      } // else the session's end closes the socket
    };
    if (tls()) {
      auto ctx = std::static_pointer_cast<ssl::context>(certs.current());
      admit_and_run(std::make_shared<Session<TlsStream>>(std::move(socket), std::move(ctx), *this));
    } else {
      admit_and_run(std::make_shared<Session<PlainStream>>(std::move(socket), *this));
    }
    accept();
  });
}

void HttpsServer::Impl::onCapReached(https_server_detail::ConnectionTable::Admission admission) {
  if (admission == https_server_detail::ConnectionTable::Admission::kRefused) {
    ++cap_refused;
  } else {
    ++cap_closed;
  }
  const auto now = SteadyClock::now();
  if (now - cap_logged_at < kCapLogInterval) {
    return;
  }
  logger->warn("{} server at its connection cap; closing the oldest connections without a "
               "request in progress max_connections={} closed={} refused={}",
               options.name, connections.max(), cap_closed, cap_refused);
  cap_logged_at = now;
  cap_closed = 0;
  cap_refused = 0;
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

std::size_t HttpsServer::openConnections() const {
  return impl_->connections.open();
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
