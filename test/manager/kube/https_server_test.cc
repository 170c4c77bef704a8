// The HTTP(S) server over loopback: TLS versions, curves and cipher
// suites, the body limit, certificate loading (files, a self-signed
// fallback) and rotation without dropping connections, the plain HTTP
// mode the probes use, and the bounds slow clients meet (the header
// timeout, the connection cap).
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <openssl/ssl.h>
#include <poll.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include "manager/kube/certificates.h"
#include "manager/kube/https_server.h"
#include "manager/kube/tls.h"
#include "test/webhooks/https_client.h"
#include "test/webhooks/test_certs.h"

namespace captf::kube {
namespace {

namespace certs = webhooks::testing;
using webhooks::testing::HttpsClient;
using webhooks::testing::KeyPair;

std::shared_ptr<spdlog::logger> nullLogger() {
  return std::make_shared<spdlog::logger>("https-server-test",
                                          std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Answers "<method> <target> <body>".
HttpReply echo(const IncomingRequest& r) {
  return HttpReply{200, "text/plain",
                   std::string(r.method) + " " + std::string(r.target) + " " + std::string(r.body)};
}

// A client that does not behave: a TCP connection to 127.0.0.1:port that
// sends what it is told, optionally over TLS (OpenSSL directly, no HTTP
// client in the way), and watches for the server closing it.
class RawConnection {
public:
  enum class Layer { kTcp, kTls };

  RawConnection(uint16_t port, Layer layer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      return;
    }
    if (layer == Layer::kTls) {
      // A write racing the server's close must fail, not kill the test.
      std::signal(SIGPIPE, SIG_IGN);
      ctx_.reset(SSL_CTX_new(TLS_client_method()));
      ssl_.reset(SSL_new(ctx_.get()));
      SSL_set_fd(ssl_.get(), fd_);
      if (SSL_connect(ssl_.get()) != 1) {
        return;
      }
    }
    // Non-blocking from here: closedWithin() polls.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    connected_ = true;
  }
  ~RawConnection() {
    ssl_.reset();
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Connected (and over TLS, the handshake done).
  [[nodiscard]] bool connected() const { return connected_; }

  // False when the connection is gone.
  bool send(std::string_view bytes) {
    if (ssl_) {
      return SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size())) ==
             static_cast<int>(bytes.size());
    }
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Reads (appending to received()) until the server closes the connection
  // or `wait` passes; whether it closed.
  bool closedWithin(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() < 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
        return false;
      }
      std::array<char, 4096> buffer{};
      if (ssl_) {
        const int n = SSL_read(ssl_.get(), buffer.data(), static_cast<int>(buffer.size()));
        if (n > 0) {
          received_.append(buffer.data(), static_cast<std::size_t>(n));
        } else if (SSL_get_error(ssl_.get(), n) != SSL_ERROR_WANT_READ) {
          return true; // close_notify, EOF or a reset
        }
      } else {
        const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
        if (n > 0) {
          received_.append(buffer.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EAGAIN) {
          return true;
        }
      }
    }
  }

  // Sends `prefix`, then one more byte of a header line every 50 ms, never
  // ending the headers; whether the server closed the connection within
  // `margin`.
  bool trickleUntilClosed(std::string_view prefix, std::chrono::milliseconds margin) {
    if (!send(prefix)) {
      return true;
    }
    const auto until = std::chrono::steady_clock::now() + margin;
    while (std::chrono::steady_clock::now() < until) {
      if (!send("a") || closedWithin(std::chrono::milliseconds(50))) {
        return true;
      }
    }
    return false;
  }

  [[nodiscard]] const std::string& received() const { return received_; }

private:
  struct FreeCtx {
    void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  };
  struct FreeSsl {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  int fd_ = -1;
  bool connected_ = false;
  std::unique_ptr<SSL_CTX, FreeCtx> ctx_;
  std::unique_ptr<SSL, FreeSsl> ssl_;
  std::string received_;
};

// What a test allows the server before it must have acted: generous, so a
// loaded machine does not fail the test, and far below the timeouts the
// bounds' tests leave the old behaviour (a minute).
constexpr std::chrono::seconds kMargin{20};
constexpr std::chrono::seconds kLong{60};

class HttpsServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("captf-https-server-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ca_ = certs::makeCa("captf-test-ca");
    certs::writePair(dir_.string(), certs::makeServingCert(ca_, {"localhost"}, 100));
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  ServerOptions options() const {
    ServerOptions opts;
    opts.name = "test";
    opts.address = "127.0.0.1";
    opts.port = 0;
    opts.cert_dir = dir_.string();
    opts.reload_interval = std::chrono::milliseconds(50);
    return opts;
  }

  void start(const ServerOptions& opts) {
    server_ = std::make_unique<HttpsServer>(opts, echo, nullLogger());
    ASSERT_TRUE(server_->start().ok());
  }

  HttpsClient client(bool max_tls12 = false) const {
    return {"127.0.0.1", server_->port(), ca_.cert_pem, max_tls12};
  }

  std::filesystem::path dir_;
  KeyPair ca_;
  std::unique_ptr<HttpsServer> server_;
};

TEST_F(HttpsServerTest, ServesTheHandlerOnOneKeepAliveConnection) {
  start(options());
  HttpsClient c = client();
  auto first = c.post("/a?timeout=10s", "one");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 200);
  EXPECT_TRUE(first->keep_alive);
  EXPECT_EQ(first->body, "POST /a?timeout=10s one");
  auto second = c.get("/b");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "GET /b ");
}

TEST_F(HttpsServerTest, RefusesBodiesOverTheLimitWith413) {
  ServerOptions opts = options();
  opts.max_body_bytes = 1024;
  start(opts);
  HttpsClient c = client();
  auto r = c.post("/x", std::string(4096, 'x'));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
  EXPECT_FALSE(r->keep_alive);
  const auto doc = nlohmann::json::parse(r->body);
  EXPECT_EQ(doc["kind"], "Status");
  EXPECT_EQ(doc["reason"], "RequestEntityTooLarge");
  EXPECT_EQ(doc["code"], 413);
}

TEST_F(HttpsServerTest, EnforcesTheMinimumTlsVersion) {
  ServerOptions opts = options();
  opts.tls.min_version = TlsVersion::kTls13;
  start(opts);
  HttpsClient old_client = client(/*max_tls12=*/true);
  EXPECT_FALSE(old_client.connect().ok());
  HttpsClient new_client = client();
  EXPECT_TRUE(new_client.connect().ok());
}

TEST_F(HttpsServerTest, HandshakesOnlyOnThePreferredCurves) {
  ServerOptions opts = options();
  opts.tls.curve_preferences = {24, 23}; // P-384, P-256
  start(opts);
  HttpsClient x25519 = client();
  x25519.offerGroups("X25519");
  EXPECT_FALSE(x25519.connect().ok());
  HttpsClient p384 = client();
  p384.offerGroups("X25519:P-384");
  EXPECT_TRUE(p384.connect().ok());
}

TEST_F(HttpsServerTest, RejectsUnknownCurves) {
  ServerOptions opts = options();
  opts.tls.curve_preferences = {23, 7};
  HttpsServer server(opts, echo, nullLogger());
  const absl::Status started = server.start();
  EXPECT_FALSE(started.ok());
  EXPECT_NE(started.message().find("unsupported TLS curve ID 7"), std::string_view::npos)
      << started;
}

TEST_F(HttpsServerTest, RejectsUnknownCipherSuitesAndVersions) {
  EXPECT_FALSE(parseTlsVersion("VersionTLS14").ok());
  EXPECT_EQ(*parseTlsVersion("VersionTLS13"), TlsVersion::kTls13);
  EXPECT_EQ(*parseTlsVersion(""), TlsVersion::kTls12);
  ServerOptions opts = options();
  opts.tls.cipher_suites = {"TLS_NOT_A_SUITE"};
  HttpsServer server(opts, echo, nullLogger());
  EXPECT_FALSE(server.start().ok());
  opts.tls.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"};
  HttpsServer server2(opts, echo, nullLogger());
  EXPECT_TRUE(server2.start().ok());
}

TEST_F(HttpsServerTest, NotReadyWithoutACertificate) {
  std::filesystem::remove(dir_ / "tls.crt");
  HttpsServer server(options(), echo, nullLogger());
  EXPECT_FALSE(server.ready().ok());
  EXPECT_FALSE(server.start().ok());
}

TEST_F(HttpsServerTest, ServesAGeneratedSelfSignedPairOnlyWhenNoFileExists) {
  ServerOptions opts = options();
  opts.cert_dir = (dir_ / "empty").string();
  opts.missing_certificate = MissingCertificate::kSelfSigned;
  HttpsServer server(
      opts,
      [](const IncomingRequest& r) {
        return HttpReply{200, "text/plain",
                         std::string(r.method) + " " + std::string(r.authorization)};
      },
      nullLogger());
  const absl::Status started = server.start();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_TRUE(server.selfSigned());
  EXPECT_TRUE(server.ready().ok());
  HttpsClient c("127.0.0.1", server.port(), "");
  c.setBearerToken("t0ken");
  auto r = c.put("/x", "1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(c.peerSelfSigned());
  EXPECT_EQ(r->body, "PUT Bearer t0ken");

  // With the files present they are served, not a generated pair.
  opts.cert_dir = dir_.string();
  HttpsServer with_files(opts, echo, nullLogger());
  ASSERT_TRUE(with_files.start().ok());
  EXPECT_FALSE(with_files.selfSigned());
  HttpsClient verified("127.0.0.1", with_files.port(), ca_.cert_pem);
  ASSERT_TRUE(verified.connect().ok());
  EXPECT_EQ(verified.peerSerial(), 100);
  EXPECT_FALSE(verified.peerSelfSigned());

  // One file without the other is an error, not a silent fallback.
  std::filesystem::remove(dir_ / "tls.key");
  HttpsServer half(opts, echo, nullLogger());
  EXPECT_FALSE(half.start().ok());
}

TEST_F(HttpsServerTest, RotatesTheCertificateWithoutDroppingOpenConnections) {
  start(options());
  EXPECT_TRUE(server_->ready().ok());
  EXPECT_EQ(server_->certificateGeneration(), 1);
  HttpsClient old_conn = client();
  ASSERT_TRUE(old_conn.connect().ok());
  EXPECT_EQ(old_conn.peerSerial(), 100);

  certs::writePair(dir_.string(), certs::makeServingCert(ca_, {"localhost"}, 200));
  for (int i = 0; i < 200 && server_->certificateGeneration() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(server_->certificateGeneration(), 2);

  HttpsClient new_conn = client();
  ASSERT_TRUE(new_conn.connect().ok());
  EXPECT_EQ(new_conn.peerSerial(), 200);
  // The connection opened before the rotation still serves.
  auto r = old_conn.post("/x", "uid-old");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "POST /x uid-old");

  // A key that does not match the certificate is not taken.
  const KeyPair third = certs::makeServingCert(ca_, {"localhost"}, 300);
  const KeyPair fourth = certs::makeServingCert(ca_, {"localhost"}, 400);
  certs::writePair(dir_.string(), {third.cert_pem, fourth.key_pem});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server_->certificateGeneration(), 2);
  EXPECT_TRUE(server_->ready().ok());
}

TEST_F(HttpsServerTest, ClosesAClientThatTricklesItsHandshakeOrHeaders) {
  ServerOptions opts = options();
  opts.header_timeout = std::chrono::milliseconds(300);
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  start(opts);
  // A handshake that never starts.
  RawConnection silent(server_->port(), RawConnection::Layer::kTcp);
  ASSERT_TRUE(silent.connected());
  // A handshake, then headers one byte at a time.
  RawConnection slow(server_->port(), RawConnection::Layer::kTls);
  ASSERT_TRUE(slow.connected());
  EXPECT_TRUE(slow.trickleUntilClosed("POST /x HTTP/1.1\r\nHost: localhost\r\nX-Slow: ", kMargin));
  EXPECT_TRUE(silent.closedWithin(kMargin));
  EXPECT_EQ(slow.received(), ""); // closed without an answer
  // A client that sends its request at once is served.
  HttpsClient c = client();
  auto r = c.post("/x", "fast");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "POST /x fast");
}

TEST_F(HttpsServerTest, AtTheConnectionCapClosesTheOldestConnectionWithoutARequest) {
  ServerOptions opts = options();
  opts.max_connections = 4;
  opts.header_timeout = kLong;
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  start(opts);
  // The API server's keep-alive connection, between two reviews.
  HttpsClient api_server = client();
  auto first = api_server.post("/a", "1");
  ASSERT_TRUE(first.ok()) << first.status();
  // Slow clients fill the cap (three) and go beyond it (three more); the
  // server accepts in connection order.
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port(), RawConnection::Layer::kTcp));
    ASSERT_TRUE(slow.back()->connected());
  }
  // Each one beyond the cap closed the oldest of them, not the connection
  // that has served a request.
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(slow[i]->closedWithin(kMargin)) << "slow client " << i;
  }
  EXPECT_EQ(server_->openConnections(), 4U);
  // A new well-behaved client gets its answer, and so does the open one.
  HttpsClient fresh = client();
  auto answer = fresh.post("/b", "2");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->body, "POST /b 2");
  auto second = api_server.post("/c", "3");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->body, "POST /c 3");
  // The fresh client took the place of the oldest remaining slow one.
  EXPECT_TRUE(slow[3]->closedWithin(kMargin));
  EXPECT_EQ(server_->openConnections(), 4U);
}

TEST_F(HttpsServerTest, KeepsServingWhileSlowClientsChurnThroughTheCap) {
  ServerOptions opts = options();
  opts.max_connections = 4;
  opts.header_timeout = kLong;
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  start(opts);
  HttpsClient api_server = client();
  ASSERT_TRUE(api_server.post("/a", "1").ok());
  // Each of these closes an older one, on another I/O thread than the one
  // that accepts it, while the connection being closed may be ending.
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 200; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port(), RawConnection::Layer::kTcp));
    slow.back()->send("\x16"); // the first byte of a TLS record, and no more
  }
  for (std::size_t i = 0; i + 3 < slow.size(); ++i) {
    EXPECT_TRUE(slow[i]->closedWithin(kMargin)) << "slow client " << i;
  }
  HttpsClient fresh = client();
  auto answer = fresh.post("/b", "2");
  ASSERT_TRUE(answer.ok()) << answer.status();
  auto second = api_server.post("/c", "3");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(server_->openConnections(), 4U);
}

TEST_F(HttpsServerTest, AtTheConnectionCapWithEveryConnectionInARequestRefusesNewOnes) {
  ServerOptions opts = options();
  opts.max_connections = 2;
  opts.header_timeout = kLong;
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  server_ = std::make_unique<HttpsServer>(
      opts,
      [&](const IncomingRequest& r) {
        std::unique_lock lock(mu);
        ++entered;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
        return echo(r);
      },
      nullLogger(), [](std::string_view) { return true; }); // on the handler threads
  ASSERT_TRUE(server_->start().ok());
  std::vector<std::thread> requests;
  requests.reserve(2);
  std::atomic<int> answered{0};
  for (int i = 0; i < 2; ++i) {
    requests.emplace_back([&] {
      HttpsClient c = client();
      if (auto r = c.post("/block", "x"); r.ok() && r->status == 200) {
        ++answered;
      }
    });
  }
  bool both_in = false;
  {
    std::unique_lock lock(mu);
    both_in = cv.wait_for(lock, kMargin, [&] { return entered == 2; });
  }
  // Both connections are in a request: the third is closed, not them.
  bool third_closed = false;
  if (both_in) {
    RawConnection third(server_->port(), RawConnection::Layer::kTcp);
    third_closed = third.connected() && third.closedWithin(kMargin);
  }
  {
    std::scoped_lock lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : requests) {
    t.join();
  }
  ASSERT_TRUE(both_in);
  EXPECT_TRUE(third_closed);
  EXPECT_EQ(answered.load(), 2);
}

TEST(CertificatesTest, SelfSignedPairsLoadAndDiffer) {
  absl::StatusOr<PemPair> a = selfSignedPair("webhook.example");
  absl::StatusOr<PemPair> b = selfSignedPair("webhook.example");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->cert_pem, b->cert_pem);
  CertificateReloader reloader("/nonexistent/tls.crt", "/nonexistent/tls.key", TlsSettings{},
                               nullLogger());
  EXPECT_EQ(reloader.current(), nullptr);
  EXPECT_FALSE(reloader.reload().ok());
  ASSERT_TRUE(reloader.install(a->cert_pem, a->key_pem).ok());
  EXPECT_NE(reloader.current(), nullptr);
  EXPECT_EQ(reloader.generation(), 1);
  // A key of another pair is refused; the installed pair stays.
  EXPECT_FALSE(reloader.install(a->cert_pem, b->key_pem).ok());
  EXPECT_EQ(reloader.generation(), 1);
}

TEST(PlaintextServerTest, ServesPlainHttpWithoutACertificate) {
  ServerOptions opts;
  opts.name = "probes";
  opts.transport = Transport::kPlaintext;
  opts.address = "127.0.0.1";
  opts.port = 0;
  opts.cert_dir = "/nonexistent/"; // not read in plain HTTP
  opts.response_headers = {{"Cache-Control", "no-store"}};
  HttpsServer server(opts, echo, nullLogger());
  EXPECT_FALSE(server.ready().ok());
  const absl::Status started = server.start();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_TRUE(server.ready().ok());
  EXPECT_EQ(server.certificateGeneration(), 0);
  EXPECT_FALSE(server.selfSigned());
  const std::string response = webhooks::testing::plainExchange(
      server.port(), "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n"
                     "\r\nhi");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << response;
  EXPECT_NE(response.find("Cache-Control: no-store\r\n"), std::string::npos) << response;
  EXPECT_NE(response.find("Content-Type: text/plain\r\n"), std::string::npos) << response;
  EXPECT_EQ(response.substr(response.find("\r\n\r\n") + 4), "POST /p hi");
  server.stop();
  EXPECT_FALSE(server.ready().ok());
}

TEST(PlaintextServerTest, KeepsTheConnectionAliveAndLimitsBodies) {
  ServerOptions opts;
  opts.transport = Transport::kPlaintext;
  opts.address = "127.0.0.1";
  opts.port = 0;
  opts.max_body_bytes = 16;
  HttpsServer server(opts, echo, nullLogger());
  const absl::Status started = server.start();
  ASSERT_TRUE(started.ok()) << started;
  // Two requests on one connection; the second closes it.
  const std::string both = webhooks::testing::plainExchange(
      server.port(), "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(both.find("GET /1 "), std::string::npos) << both;
  EXPECT_NE(both.find("GET /2 "), std::string::npos) << both;
  const std::string large = webhooks::testing::plainExchange(
      server.port(),
      "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n" + std::string(64, 'x'));
  EXPECT_EQ(large.rfind("HTTP/1.1 413 ", 0), 0U) << large;
}

TEST(PlaintextServerTest, BoundsEachKeepAliveRequestsHeadersFromItsFirstByte) {
  ServerOptions opts;
  opts.transport = Transport::kPlaintext;
  opts.address = "127.0.0.1";
  opts.port = 0;
  opts.header_timeout = std::chrono::milliseconds(300);
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  HttpsServer server(opts, echo, nullLogger());
  ASSERT_TRUE(server.start().ok());
  RawConnection conn(server.port(), RawConnection::Layer::kTcp);
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_FALSE(conn.closedWithin(std::chrono::milliseconds(1000)));
  EXPECT_NE(conn.received().find("GET /1 "), std::string::npos) << conn.received();
  // Idle for more than the header timeout: the idle timeout governs until
  // the next request's first byte.
  ASSERT_TRUE(conn.send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_FALSE(conn.closedWithin(std::chrono::milliseconds(1000)));
  EXPECT_NE(conn.received().find("GET /2 "), std::string::npos) << conn.received();
  // A third request whose headers trickle is cut off.
  EXPECT_TRUE(conn.trickleUntilClosed("GET /3 HTTP/1.1\r\nX-Slow: ", kMargin));
  EXPECT_EQ(conn.received().find("GET /3 "), std::string::npos) << conn.received();
}

TEST(PlaintextServerTest, DrainsABodyAfterA413ForOneShortTimeoutOnly) {
  ServerOptions opts;
  opts.transport = Transport::kPlaintext;
  opts.address = "127.0.0.1";
  opts.port = 0;
  opts.max_body_bytes = 16;
  opts.request_timeout = kLong;
  opts.idle_timeout = kLong;
  HttpsServer server(opts, echo, nullLogger());
  ASSERT_TRUE(server.start().ok());
  RawConnection conn(server.port(), RawConnection::Layer::kTcp);
  ASSERT_TRUE(conn.connected());
  // The body that follows the 413 trickles and never ends: the lingering
  // close still ends.
  EXPECT_TRUE(conn.trickleUntilClosed(
      "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n", kMargin));
  EXPECT_EQ(conn.received().rfind("HTTP/1.1 413 ", 0), 0U) << conn.received();
}

TEST(PlaintextServerTest, AnEmptyAddressListensOnEveryInterface) {
  ServerOptions opts;
  opts.transport = Transport::kPlaintext;
  opts.address = "";
  opts.port = 0;
  // The one case a machine can rule out: a kernel without IPv6 cannot open
  // the dual-stack socket. Any other failure to start is the server's.
  const int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) {
    GTEST_SKIP() << "no IPv6 on this machine: socket(AF_INET6): " << std::strerror(errno);
  }
  ::close(probe);
  HttpsServer server(opts, echo, nullLogger());
  const absl::Status started = server.start();
  ASSERT_TRUE(started.ok()) << started;
  // Reached over IPv4 through the dual-stack socket.
  const std::string response = webhooks::testing::plainExchange(
      server.port(), "GET /any HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << response;
}

} // namespace
} // namespace captf::kube
