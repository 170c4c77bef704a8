#include "webhooks/server.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stop_token>
#include <thread>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "webhooks/registrations.h"

namespace captf::webhooks {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeaderBytes = 64U * 1024U;
constexpr std::chrono::seconds kShutdownTimeout{2};

std::string openSslError() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    if (!out.empty()) {
      out += "; ";
    }
    out += buf.data();
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::StatusOr<std::string> readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(fmt::format("cannot open {}", path));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    return absl::UnavailableError(fmt::format("cannot read {}", path));
  }
  return buf.str();
}

int protoVersion(TlsVersion v) {
  switch (v) {
  case TlsVersion::kTls10:
    return TLS1_VERSION;
  case TlsVersion::kTls11:
    return TLS1_1_VERSION;
  case TlsVersion::kTls12:
    return TLS1_2_VERSION;
  case TlsVersion::kTls13:
    return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// Restricts the TLS 1.2 suites to `names` (IANA or Go names). TLS 1.3
// suites are not configurable, as in Go's crypto/tls.
absl::Status setCipherSuites(SSL_CTX* ctx, const std::vector<std::string>& names) {
  if (names.empty()) {
    return absl::OkStatus();
  }
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
  std::string list;
  for (const std::string& want : names) {
    if (want.starts_with("TLS_AES_") || want.starts_with("TLS_CHACHA20_")) {
      continue; // a TLS 1.3 suite: always on
    }
    bool found = false;
    for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
      const std::string standard = SSL_CIPHER_standard_name(c);
      // Go names the ChaCha20 suites without the _SHA256 suffix.
      if (standard == want || standard == want + "_SHA256") {
        if (!list.empty()) {
          list += ":";
        }
        list += SSL_CIPHER_get_name(c);
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(fmt::format("unsupported TLS cipher suite {}", want));
    }
  }
  if (!list.empty() && SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("cannot set the TLS cipher suites: {}", openSslError()));
  }
  return absl::OkStatus();
}

// Restricts the key exchange groups to `ids` (Go's tls.CurveID numbers,
// as --tls-curve-preferences takes them), in that order of preference.
absl::Status setCurvePreferences(SSL_CTX* ctx, const std::vector<int>& ids) {
  if (ids.empty()) {
    return absl::OkStatus();
  }
  static const std::map<int, std::string_view> kGroups = {
      {23, "P-256"}, {24, "P-384"}, {25, "P-521"}, {29, "X25519"}, {4588, "X25519MLKEM768"}};
  std::string list;
  for (int id : ids) {
    auto group = kGroups.find(id);
    if (group == kGroups.end()) {
      return absl::InvalidArgumentError(fmt::format(
          "unsupported TLS curve ID {} (Go's tls.CurveID: 23 P-256, 24 P-384, 25 P-521, "
          "29 X25519, 4588 X25519MLKEM768)",
          id));
    }
    if (!list.empty()) {
      list += ":";
    }
    list += group->second;
  }
  if (SSL_CTX_set1_groups_list(ctx, list.c_str()) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("cannot use the TLS curves {}: {}", list, openSslError()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<ssl::context>>
makeContext(const std::string& cert_pem, const std::string& key_pem, const TlsSettings& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* h = ctx->native_handle();
  SSL_CTX_set_min_proto_version(h, protoVersion(tls.min_version));
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                             SSL_OP_NO_COMPRESSION);
  if (absl::Status s = setCipherSuites(h, tls.cipher_suites); !s.ok()) {
    return s;
  }
  if (absl::Status s = setCurvePreferences(h, tls.curve_preferences); !s.ok()) {
    return s;
  }
  boost::system::error_code ec;
  ctx->use_certificate_chain(net::buffer(cert_pem), ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("cannot load the serving certificate: {}", ec.message()));
  }
  ctx->use_private_key(net::buffer(key_pem), ssl::context::pem, ec);
  if (ec) {
    return absl::InvalidArgumentError(fmt::format("cannot load the serving key: {}", ec.message()));
  }
  if (SSL_CTX_check_private_key(h) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("the serving key does not match the certificate: {}", openSslError()));
  }
  return ctx;
}

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') {
    return dir + name;
  }
  return dir + "/" + name;
}

std::string statusJson(int code, std::string_view reason, std::string_view message) {
  nlohmann::json doc = {{"apiVersion", "v1"},
                        {"kind", "Status"},
                        {"status", "Failure"},
                        {"reason", std::string(reason)},
                        {"message", std::string(message)},
                        {"code", code}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// request.uid of a review parseAdmissionReview refused, so the denial still
// echoes it when there is one.
std::string bestEffortUid(std::string_view body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object()) {
    return "";
  }
  const auto req = doc.find("request");
  if (req == doc.end() || !req->is_object()) {
    return "";
  }
  const auto uid = req->find("uid");
  return uid != req->end() && uid->is_string() ? uid->get<std::string>() : "";
}

struct OpenSslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};

std::string memBioString(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

} // namespace

absl::StatusOr<PemPair> selfSignedPair(std::string_view host) {
  auto fail = [](const char* what) {
    return absl::InternalError(fmt::format("{}: {}", what, openSslError()));
  };
  std::unique_ptr<EVP_PKEY, OpenSslFree> key(EVP_EC_gen("P-256"));
  std::unique_ptr<X509, OpenSslFree> cert(X509_new());
  if (key == nullptr || cert == nullptr) {
    return fail("cannot generate a key");
  }
  std::array<unsigned char, 16> serial{};
  if (RAND_bytes(serial.data(), static_cast<int>(serial.size())) != 1) {
    return fail("cannot draw a serial number");
  }
  serial[0] &= 0x7F; // positive
  BIGNUM* bn = BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr);
  const bool serial_set =
      bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(bn);
  if (!serial_set || X509_set_version(cert.get(), 2) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24L * 3600L) == nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1) {
    return fail("cannot fill the certificate");
  }
  const std::string cn(host);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1) {
    return fail("cannot name the certificate");
  }
  const std::string san = cn == "localhost" ? "DNS:localhost,IP:127.0.0.1"
                                            : fmt::format("DNS:{},DNS:localhost,IP:127.0.0.1", cn);
  const std::pair<int, std::string> extensions[] = {
      {NID_subject_alt_name, san},
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
      {NID_ext_key_usage, "serverAuth"},
  };
  for (const auto& [nid, value] : extensions) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    std::unique_ptr<X509_EXTENSION, OpenSslFree> ext(
        X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
    if (ext == nullptr || X509_add_ext(cert.get(), ext.get(), -1) != 1) {
      return fail("cannot add a certificate extension");
    }
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return fail("cannot sign the certificate");
  }
  std::unique_ptr<BIO, OpenSslFree> cert_bio(BIO_new(BIO_s_mem()));
  std::unique_ptr<BIO, OpenSslFree> key_bio(BIO_new(BIO_s_mem()));
  if (cert_bio == nullptr || key_bio == nullptr ||
      PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return fail("cannot encode the pair");
  }
  return PemPair{memBioString(cert_bio.get()), memBioString(key_bio.get())};
}

absl::StatusOr<TlsVersion> parseTlsVersion(std::string_view name) {
  if (name == "VersionTLS10") {
    return TlsVersion::kTls10;
  }
  if (name == "VersionTLS11") {
    return TlsVersion::kTls11;
  }
  if (name == "VersionTLS12" || name.empty()) {
    return TlsVersion::kTls12;
  }
  if (name == "VersionTLS13") {
    return TlsVersion::kTls13;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown TLS version {}: want VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13",
      name));
}

// ---- CertificateReloader ----------------------------------------------------

struct CertificateReloader::Impl {
  std::string cert_file;
  std::string key_file;
  TlsSettings tls;
  std::shared_ptr<spdlog::logger> logger;

  mutable std::mutex mu;
  std::shared_ptr<ssl::context> ctx;
  std::string cert_pem;
  std::string key_pem;
  int generation = 0;
};

CertificateReloader::CertificateReloader(std::string cert_file, std::string key_file,
                                         TlsSettings tls, std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>()) {
  impl_->cert_file = std::move(cert_file);
  impl_->key_file = std::move(key_file);
  impl_->tls = std::move(tls);
  impl_->logger = std::move(logger);
}

CertificateReloader::~CertificateReloader() = default;

absl::StatusOr<bool> CertificateReloader::reload() {
  absl::StatusOr<std::string> cert = readWholeFile(impl_->cert_file);
  if (!cert.ok()) {
    return cert.status();
  }
  absl::StatusOr<std::string> key = readWholeFile(impl_->key_file);
  if (!key.ok()) {
    return key.status();
  }
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->ctx && *cert == impl_->cert_pem && *key == impl_->key_pem) {
      return false;
    }
  }
  // A half-written rotation (new certificate, old key) fails the key check
  // and is retried on the next poll; the old pair keeps serving meanwhile.
  absl::StatusOr<std::shared_ptr<ssl::context>> ctx = makeContext(*cert, *key, impl_->tls);
  if (!ctx.ok()) {
    return ctx.status();
  }
  std::lock_guard lock(impl_->mu);
  impl_->ctx = *std::move(ctx);
  impl_->cert_pem = *std::move(cert);
  impl_->key_pem = *std::move(key);
  ++impl_->generation;
  return true;
}

absl::Status CertificateReloader::install(const std::string& cert_pem, const std::string& key_pem) {
  absl::StatusOr<std::shared_ptr<ssl::context>> ctx = makeContext(cert_pem, key_pem, impl_->tls);
  if (!ctx.ok()) {
    return ctx.status();
  }
  std::lock_guard lock(impl_->mu);
  impl_->ctx = *std::move(ctx);
  // Not the files' content: the next reload() that finds files loads them.
  impl_->cert_pem.clear();
  impl_->key_pem.clear();
  ++impl_->generation;
  return absl::OkStatus();
}

std::shared_ptr<void> CertificateReloader::current() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ctx;
}

int CertificateReloader::generation() const {
  std::lock_guard lock(impl_->mu);
  return impl_->generation;
}

// ---- HttpsServer ------------------------------------------------------------

struct HttpsServer::Impl {
  Impl(ServerOptions opts, HttpHandler h, std::shared_ptr<spdlog::logger> log, MayBlock blocks)
      : options(std::move(opts)), handler(std::move(h)), may_block(std::move(blocks)),
        logger(std::move(log)),
        certs(joinPath(options.cert_dir, options.cert_name),
              joinPath(options.cert_dir, options.key_name), options.tls, logger),
        ioc(std::max(1, options.io_threads)) {}

  void accept();
  void reloadLoop(std::stop_token stop);

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

class Session : public std::enable_shared_from_this<Session> {
public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> ctx, HttpsServer::Impl& server)
      : ctx_(std::move(ctx)), stream_(std::move(socket), *ctx_), server_(server) {}

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      beast::get_lowest_layer(self->stream_).expires_after(self->server_.options.request_timeout);
      self->stream_.async_handshake(ssl::stream_base::server,
                                    [self](beast::error_code ec) { self->onHandshake(ec); });
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
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(server_.options.max_body_bytes);
    beast::get_lowest_layer(stream_).expires_after(server_.options.idle_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onHeader(ec); });
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
                     [self = shared_from_this()](beast::error_code read_ec, std::size_t) {
                       self->onRead(read_ec);
                     });
  }

  void tooLarge() {
    HttpReply reply{413, "application/json",
                    statusJson(413, "RequestEntityTooLarge",
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
      return server_.handler(HttpRequest{view(r.method_string()), view(r.target()),
                                         view(r[http::field::authorization]), r.body()});
    };
    if (!server_.may_block || !server_.may_block(view(req->target()))) {
      write(handle(*req), version, keep_alive);
      return;
    }
    // The handler may block on the API server: run it off the I/O threads,
    // then write on this connection's strand.
    net::post(*server_.handler_pool, [self = shared_from_this(), req, keep_alive, version, handle] {
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
    res_.keep_alive(keep_alive);
    res_.body() = std::move(reply.body);
    res_.prepare_payload();
    const bool unread_body = reply.status == 413;
    const bool close_after = !keep_alive || unread_body;
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    http::async_write(
        stream_, res_,
        [self = shared_from_this(), close_after, unread_body](beast::error_code ec, std::size_t) {
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
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) {
                                self->drain();
                              }
                            });
  }

  void close() {
    beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) {});
  }

  // The context outlives the stream made from it.
  std::shared_ptr<ssl::context> ctx_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  HttpsServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  SteadyClock::time_point deadline_;
  std::array<char, 16384> drain_buffer_{};
};

} // namespace

void HttpsServer::Impl::accept() {
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec != net::error::operation_aborted) {
        logger->warn("{} accept failed error={}", options.name, ec.message());
        accept();
      }
      return;
    }
    auto ctx = std::static_pointer_cast<ssl::context>(certs.current());
    std::make_shared<Session>(std::move(socket), std::move(ctx), *this)->run();
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
  std::error_code exists_ec;
  const bool no_files =
      !std::filesystem::exists(joinPath(s.options.cert_dir, s.options.cert_name), exists_ec) &&
      !std::filesystem::exists(joinPath(s.options.cert_dir, s.options.key_name), exists_ec);
  if (no_files && s.options.missing_certificate == MissingCertificate::kSelfSigned) {
    // As controller-runtime's metrics server: no mounted pair at start, a
    // generated one for the life of the process.
    absl::StatusOr<PemPair> pair = selfSignedPair("localhost");
    if (!pair.ok()) {
      return pair.status();
    }
    if (absl::Status installed = s.certs.install(pair->cert_pem, pair->key_pem); !installed.ok()) {
      return installed;
    }
    s.self_signed = true;
    s.logger->info("no {} serving certificate found; serving a self-signed certificate generated "
                   "at startup cert_dir={}",
                   name, s.options.cert_dir);
  } else if (absl::StatusOr<bool> loaded = s.certs.reload(); !loaded.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("cannot load the {} serving certificate from {}: {}", name, s.options.cert_dir,
                    std::string(loaded.status().message())));
  }
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(s.options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("invalid {} bind address {}: {}", name, s.options.address, ec.message()));
  }
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.emplace(s.ioc);
  if (s.acceptor->open(endpoint.protocol(), ec); ec) {
    return absl::UnavailableError(fmt::format("cannot open the {} socket: {}", name, ec.message()));
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
  if (!s.self_signed) {
    s.reloader = std::jthread([&s](std::stop_token stop) { s.reloadLoop(stop); });
  }
  s.serving = true;
  s.logger->info("{} server listening address={} port={} cert_dir={}", name, s.options.address,
                 s.port.load(), s.options.cert_dir);
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
  if (impl_->certs.current() == nullptr) {
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

// ---- WebhookServer ----------------------------------------------------------

WebhookServer::WebhookServer(ServerOptions options, const AdmissionHandler& handler,
                             std::shared_ptr<spdlog::logger> logger)
    : handler_(handler), server_(
                             std::move(options),
                             [this](const HttpRequest& request) {
                               return serve(request.method, request.target, request.body);
                             },
                             std::move(logger),
                             [](std::string_view target) {
                               const WebhookRegistration* reg =
                                   registrationForPath(target.substr(0, target.find('?')));
                               return reg != nullptr && reg->calls_api_server;
                             }) {}

WebhookServer::Reply WebhookServer::serve(std::string_view method, std::string_view target,
                                          std::string_view body) const {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/readyz" || path == "/healthz") {
    return {200, "text/plain", "ok"};
  }
  const WebhookRegistration* reg = registrationForPath(path);
  if (reg == nullptr) {
    return {404, "application/json",
            statusJson(404, "NotFound", fmt::format("no webhook is served at {}", path))};
  }
  if (method != "POST") {
    return {405, "application/json",
            statusJson(405, "MethodNotAllowed", "admission reviews are POSTed")};
  }
  absl::StatusOr<AdmissionRequest> request = parseAdmissionReview(body);
  if (!request.ok()) {
    return {200, "application/json",
            encodeAdmissionReview(
                badRequest(bestEffortUid(body), std::string(request.status().message())))};
  }
  if (request->kind != reg->kind) {
    return {200, "application/json",
            encodeAdmissionReview(
                badRequest(request->uid, fmt::format("{} validates {} objects, not {}", reg->path,
                                                     reg->kind, request->kind)))};
  }
  return {200, "application/json", encodeAdmissionReview(handler_.handle(*request))};
}

} // namespace captf::webhooks
