#include "manager/kube/transport.h"

#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

absl::Status transportError(std::string_view what, const beast::error_code& ec) {
  if (ec == beast::error::timeout) {
    return absl::DeadlineExceededError(absl::StrCat(av(what), ": timed out"));
  }
  if (ec == asio::error::operation_aborted) {
    return absl::CancelledError(absl::StrCat(av(what), ": cancelled"));
  }
  return absl::UnavailableError(absl::StrCat(av(what), ": ", ec.message()));
}

bool isIpLiteral(const std::string& host) {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

absl::StatusOr<std::shared_ptr<ssl::context>> makeContext(const TlsOptions& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  beast::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (tls.insecure_skip_verify) {
    ctx->set_verify_mode(ssl::verify_none);
  } else {
    ctx->set_verify_mode(ssl::verify_peer);
    if (tls.ca_pem.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->add_certificate_authority(asio::buffer(tls.ca_pem), ec);
    }
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load CA certificates: ", ec.message()));
    }
  }
  if (!tls.client_cert_pem.empty()) {
    ctx->use_certificate_chain(asio::buffer(tls.client_cert_pem), ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot load the client certificate: ", ec.message()));
    }
    ctx->use_private_key(asio::buffer(tls.client_key_pem), ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat("cannot load the client key: ", ec.message()));
    }
  }
  return ctx;
}

// One TLS connection with its own io_context: the thread that uses the
// connection runs the context for the duration of each operation, so a
// blocking API gets per-operation deadlines from beast::tcp_stream.
struct Connection {
  Connection(std::shared_ptr<ssl::context> context, uint64_t tls_generation)
      : ctx(std::move(context)), stream(ioc, *ctx), generation(tls_generation) {}

  // Runs one asynchronous operation to completion with `deadline`.
  template <class Start> beast::error_code run(SteadyTime deadline, Start&& start) {
    beast::get_lowest_layer(stream).expires_at(deadline);
    beast::error_code result;
    bool done = false;
    start([&](beast::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    ioc.restart();
    ioc.run();
    if (!done) {
      result = asio::error::operation_aborted;
    }
    return result;
  }

  // Whether the peer has closed or reset the connection, or sent anything,
  // while it sat idle: an idle HTTP/1.1 connection owes nothing, so either
  // way it cannot carry the next request.
  bool closedWhileIdle() {
    pollfd fd{};
    fd.fd = beast::get_lowest_layer(stream).socket().native_handle();
    fd.events = POLLIN;
    return ::poll(&fd, 1, 0) != 0;
  }

  asio::io_context ioc{1};
  std::shared_ptr<ssl::context> ctx;
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  uint64_t generation;
  bool reused = false;
  SteadyTime idle_since{};
};

Headers collectHeaders(const http::fields& fields) {
  Headers out;
  for (const auto& field : fields) {
    out.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return out;
}

std::string findHeader(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, av(name))) {
      return value;
    }
  }
  return {};
}

http::request<http::string_body> buildRequest(const HttpRequest& request, const std::string& host) {
  http::request<http::string_body> req;
  req.method_string(request.method);
  req.target(request.target);
  req.version(11);
  req.set(http::field::host, host);
  for (const auto& [name, value] : request.headers) {
    req.set(name, value);
  }
  req.body() = request.body;
  req.keep_alive(true);
  req.prepare_payload();
  return req;
}

class HttpsTransport;

class BeastBodyStream final : public BodyStream {
public:
  BeastBodyStream(std::unique_ptr<Connection> connection,
                  std::unique_ptr<http::response_parser<http::buffer_body>> parser,
                  SteadyTime deadline, std::stop_token stop)
      : connection_(std::move(connection)), parser_(std::move(parser)), deadline_(deadline),
        stop_(std::move(stop)), headers_(collectHeaders(parser_->get().base())),
        on_stop_(stop_, [conn = connection_.get()] {
          // Runs on the stopping thread: hand the cancellation to the thread
          // that runs the connection's io_context.
          asio::post(conn->ioc, [conn] { beast::get_lowest_layer(conn->stream).cancel(); });
        }) {}

  int status() const override { return static_cast<int>(parser_->get().result_int()); }
  std::string header(std::string_view name) const override { return findHeader(headers_, name); }

  absl::StatusOr<std::string> read() override {
    // read_some, not read: return as soon as any body bytes arrived (a
    // watch event must not wait for the buffer to fill). A read that only
    // consumed framing (chunk headers) yields no body bytes: read again.
    while (true) {
      if (stop_.stop_requested()) {
        return absl::CancelledError("stream stopped");
      }
      if (parser_->is_done()) {
        return std::string();
      }
      auto& body = parser_->get().body();
      body.data = chunk_.data();
      body.size = chunk_.size();
      auto ec = connection_->run(deadline_, [&](auto handler) {
        http::async_read_some(connection_->stream, connection_->buffer, *parser_,
                              std::move(handler));
      });
      if (ec == http::error::need_buffer) {
        ec = {};
      }
      if (ec == http::error::end_of_stream || ec == asio::error::eof) {
        return absl::UnavailableError("the server closed the stream");
      }
      if (ec) {
        if (stop_.stop_requested()) {
          return absl::CancelledError("stream stopped");
        }
        return transportError("reading the stream", ec);
      }
      size_t got = chunk_.size() - body.size;
      if (got > 0) {
        return std::string(chunk_.data(), got);
      }
    }
  }

private:
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  SteadyTime deadline_;
  std::stop_token stop_;
  Headers headers_;
  std::array<char, std::size_t{64} * 1024> chunk_{};
  std::stop_callback<std::function<void()>> on_stop_;
};

class HttpsTransport final : public HttpTransport {
public:
  HttpsTransport(std::string host, std::string port, TlsOptions tls, TransportOptions options,
                 std::shared_ptr<ssl::context> ctx)
      : host_(std::move(host)), port_(std::move(port)),
        verify_name_(tls.server_name.empty() ? host_ : tls.server_name), options_(options),
        tls_(std::move(tls)), ctx_(std::move(ctx)) {
    host_header_ = absl::StrCat(
        isIpLiteral(host_) && absl::StrContains(host_, ':') ? absl::StrCat("[", host_, "]") : host_,
        ":", port_);
  }

  absl::StatusOr<HttpResponse> roundTrip(const HttpRequest& request) override {
    SteadyTime deadline = std::chrono::steady_clock::now() + request.timeout;
    auto req = buildRequest(request, host_header_);
    // A pooled connection that the server or the path closed fails before
    // any byte of the answer; the request is sent again once, on a new
    // connection (what Go's transport does), and the pooled connections idle
    // as long are dropped with it.
    for (bool fresh = false;; fresh = true) {
      auto connection = acquire(deadline, fresh);
      if (!connection.ok()) {
        return connection.status();
      }
      Connection& conn = **connection;
      auto ec = conn.run(
          deadline, [&](auto handler) { http::async_write(conn.stream, req, std::move(handler)); });
      if (ec) {
        if (retryable(conn, ec, false)) {
          continue;
        }
        return transportError(absl::StrCat(request.method, " ", av(pathOf(request))), ec);
      }
      http::response_parser<http::string_body> parser;
      parser.body_limit(options_.max_body_bytes);
      ec = conn.run(deadline, [&](auto handler) {
        http::async_read(conn.stream, conn.buffer, parser, std::move(handler));
      });
      if (ec) {
        if (retryable(conn, ec, parser.got_some())) {
          continue;
        }
        return transportError(absl::StrCat(request.method, " ", av(pathOf(request))), ec);
      }
      auto res = parser.release();
      HttpResponse response;
      response.status = static_cast<int>(res.result_int());
      response.headers = collectHeaders(res.base());
      response.body = std::move(res.body());
      if (res.keep_alive()) {
        release(std::move(*connection));
      }
      return response;
    }
  }

  absl::StatusOr<std::unique_ptr<BodyStream>> open(const HttpRequest& request,
                                                   std::stop_token stop) override {
    SteadyTime deadline = std::chrono::steady_clock::now() + request.timeout;
    auto req = buildRequest(request, host_header_);
    for (bool fresh = false;; fresh = true) {
      auto connection = acquire(deadline, fresh);
      if (!connection.ok()) {
        return connection.status();
      }
      Connection& conn = **connection;
      auto ec = conn.run(
          deadline, [&](auto handler) { http::async_write(conn.stream, req, std::move(handler)); });
      auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
      parser->body_limit(boost::none);
      if (!ec) {
        ec = conn.run(deadline, [&](auto handler) {
          http::async_read_header(conn.stream, conn.buffer, *parser, std::move(handler));
        });
      }
      if (ec) {
        if (retryable(conn, ec, parser->got_some())) {
          continue;
        }
        return transportError(absl::StrCat(request.method, " ", av(pathOf(request))), ec);
      }
      return std::make_unique<BeastBodyStream>(std::move(*connection), std::move(parser), deadline,
                                               std::move(stop));
    }
  }

  absl::Status setClientCertificate(const std::string& cert_pem,
                                    const std::string& key_pem) override {
    std::scoped_lock lock(mu_);
    if (tls_.client_cert_pem == cert_pem && tls_.client_key_pem == key_pem) {
      return absl::OkStatus();
    }
    TlsOptions tls = tls_;
    tls.client_cert_pem = cert_pem;
    tls.client_key_pem = key_pem;
    auto ctx = makeContext(tls);
    if (!ctx.ok()) {
      return ctx.status();
    }
    tls_ = std::move(tls);
    ctx_ = *std::move(ctx);
    ++generation_;
    idle_.clear();
    return absl::OkStatus();
  }

private:
  static std::string_view pathOf(const HttpRequest& request) {
    std::string_view target = request.target;
    return target.substr(0, target.find('?'));
  }

  // Whether a request that failed with `ec` on `conn` is sent again on a
  // new connection: only from a pooled connection, only before any byte of
  // the answer, never after its own deadline. The pooled connections idle
  // at least as long as this one are taken to be dead too.
  bool retryable(const Connection& conn, const beast::error_code& ec, bool answered) {
    if (!conn.reused || answered || ec == beast::error::timeout) {
      return false;
    }
    std::scoped_lock lock(mu_);
    std::erase_if(idle_, [&](const std::unique_ptr<Connection>& idle) {
      return idle->idle_since <= conn.idle_since;
    });
    return true;
  }

  // A pooled connection (the most recently used first) unless `fresh`, or
  // a new one. Pooled connections idle past the idle timeout, or closed by
  // the peer while idle, are dropped on the way.
  absl::StatusOr<std::unique_ptr<Connection>> acquire(SteadyTime deadline, bool fresh) {
    std::shared_ptr<ssl::context> ctx;
    uint64_t generation = 0;
    {
      std::scoped_lock lock(mu_);
      const SteadyTime now = std::chrono::steady_clock::now();
      while (!fresh && !idle_.empty()) {
        auto conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->generation == generation_ && now - conn->idle_since < options_.idle_timeout &&
            !conn->closedWhileIdle()) {
          conn->reused = true;
          return conn;
        }
      }
      ctx = ctx_;
      generation = generation_;
    }
    auto conn = std::make_unique<Connection>(ctx, generation);
    tcp::resolver resolver(conn->ioc);
    beast::error_code ec;
    auto endpoints = resolver.resolve(host_, port_, ec);
    if (ec) {
      return transportError(absl::StrCat("resolving ", host_), ec);
    }
    ec = conn->run(deadline, [&](auto handler) {
      beast::get_lowest_layer(conn->stream).async_connect(endpoints, std::move(handler));
    });
    if (ec) {
      return transportError(absl::StrCat("connecting to ", host_header_), ec);
    }
    beast::get_lowest_layer(conn->stream).socket().set_option(tcp::no_delay(true), ec);
    SSL* ssl = conn->stream.native_handle();
    const std::string& name = verify_name_;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (isIpLiteral(name)) {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(name.c_str())); // SSL_ctrl takes void*
    }
    ec = conn->run(deadline, [&](auto handler) {
      conn->stream.async_handshake(ssl::stream_base::client, std::move(handler));
    });
    if (ec) {
      return transportError(absl::StrCat("TLS handshake with ", host_header_), ec);
    }
    return conn;
  }

  void release(std::unique_ptr<Connection> conn) {
    conn->idle_since = std::chrono::steady_clock::now();
    std::scoped_lock lock(mu_);
    if (conn->generation == generation_ && idle_.size() < options_.max_idle_connections) {
      idle_.push_back(std::move(conn));
    }
  }

  const std::string host_;
  const std::string port_;
  const std::string verify_name_;
  std::string host_header_;
  const TransportOptions options_;
  std::mutex mu_;
  TlsOptions tls_;
  std::shared_ptr<ssl::context> ctx_;
  uint64_t generation_ = 0;
  std::vector<std::unique_ptr<Connection>> idle_;
};

} // namespace

std::string HttpResponse::header(std::string_view name) const {
  return findHeader(headers, name);
}

absl::StatusOr<std::unique_ptr<HttpTransport>> makeHttpsTransport(std::string host,
                                                                  std::string port,
                                                                  const TlsOptions& tls,
                                                                  const TransportOptions& options) {
  auto ctx = makeContext(tls);
  if (!ctx.ok()) {
    return ctx.status();
  }
  return std::make_unique<HttpsTransport>(std::move(host), std::move(port), tls, options,
                                          *std::move(ctx));
}

} // namespace captf::kube
