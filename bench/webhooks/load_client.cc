// An open-loop HTTPS load client for the webhook server: CONNECTIONS
// keep-alive connections POST one AdmissionReview each at a fixed total
// RATE for SECONDS, latency measured from each request's scheduled send time
// (so a stalled server is not hidden by coordinated omission). Prints
// requests, errors, achieved rate and p50/p90/p99/max latency.
//
//   load_client HOST PORT CA_FILE PATH BODY_FILE RATE SECONDS CONNECTIONS
//               [--slow-clients N] [--slow-interval-ms MS] [--slow-reconnect-ms MS]
//
// --slow-clients N adds N slow clients on one more thread: each connects,
// completes the TLS handshake, sends the start of a request's headers,
// then one more header byte every --slow-interval-ms (1000) and never ends
// them; when the server closes it, it reconnects after --slow-reconnect-ms
// (1000). The measurement starts once every slow client has connected (or
// after 60 s), so the admission load meets a server already full of them.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct SlowSettings {
  int clients = 0;
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds reconnect{1000};
  std::string prefix; // the start of the headers
};

struct SlowStats {
  std::atomic<long> connected{0}; // TLS handshakes completed
  std::atomic<long> closed{0};    // connections the server closed
  std::atomic<long> failed{0};    // connects or handshakes that failed
  std::atomic<long> answered{0};  // bytes the server sent back (it should send none)
  std::atomic<bool> stopping{false};
};

// One slow connection; when it ends, a new one takes its place.
class SlowConnection : public std::enable_shared_from_this<SlowConnection> {
public:
  SlowConnection(net::io_context& ioc, ssl::context& ctx, tcp::endpoint endpoint,
                 const SlowSettings& settings, SlowStats& stats)
      : ioc_(ioc), ctx_(ctx), endpoint_(endpoint), settings_(settings), stats_(stats),
        stream_(ioc, ctx), timer_(ioc) {}

  void start(Clock::duration delay) {
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) {
        self->connect();
      }
    });
  }

private:
  void connect() {
    beast::get_lowest_layer(stream_).async_connect(
        endpoint_, [self = shared_from_this()](beast::error_code ec) {
          if (ec) {
            ++self->stats_.failed;
            self->again();
            return;
          }
          self->stream_.async_handshake(ssl::stream_base::client, [self](beast::error_code hec) {
            if (hec) {
              ++self->stats_.failed;
              self->again();
              return;
            }
            ++self->stats_.connected;
            net::async_write(self->stream_, net::buffer(self->settings_.prefix),
                             [self](beast::error_code wec, std::size_t) {
                               if (!wec) {
                                 self->tick();
                               }
                             });
            self->watch();
          });
        });
  }

  // The one read: it ends when the server closes the connection.
  void watch() {
    stream_.async_read_some(net::buffer(buffer_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (!ec) {
                                self->stats_.answered += static_cast<long>(n);
                                self->watch();
                                return;
                              }
                              ++self->stats_.closed;
                              self->done_ = true;
                              self->timer_.cancel();
                              self->again();
                            });
  }

  void tick() {
    timer_.expires_after(settings_.interval);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->done_) {
        return;
      }
      net::async_write(self->stream_, net::buffer("a", 1),
                       [self](beast::error_code wec, std::size_t) {
                         if (!wec) {
                           self->tick();
                         }
                       });
    });
  }

  void again() {
    if (stats_.stopping) {
      return;
    }
    std::make_shared<SlowConnection>(ioc_, ctx_, endpoint_, settings_, stats_)
        ->start(settings_.reconnect);
  }

  net::io_context& ioc_;
  ssl::context& ctx_;
  tcp::endpoint endpoint_;
  const SlowSettings& settings_;
  SlowStats& stats_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  net::steady_timer timer_;
  std::array<char, 4096> buffer_{};
  bool done_ = false;
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 9 || argc % 2 == 0) {
    std::cerr << "usage: load_client HOST PORT CA_FILE PATH BODY_FILE RATE SECONDS CONNECTIONS "
                 "[--slow-clients N] [--slow-interval-ms MS] [--slow-reconnect-ms MS]\n";
    return 2;
  }
  SlowSettings slow;
  for (int i = 9; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::stoi(argv[i + 1]);
    if (flag == "--slow-clients") {
      slow.clients = value;
    } else if (flag == "--slow-interval-ms") {
      slow.interval = std::chrono::milliseconds(value);
    } else if (flag == "--slow-reconnect-ms") {
      slow.reconnect = std::chrono::milliseconds(value);
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  const std::string host = argv[1];
  const std::string port = argv[2];
  const std::string path = argv[4];
  std::stringstream body_buf;
  body_buf << std::ifstream(argv[5]).rdbuf();
  const std::string body = body_buf.str();
  const double rate = std::stod(argv[6]);
  const double seconds = std::stod(argv[7]);
  const int connections = std::stoi(argv[8]);

  // The slow clients, on their own thread, reach the server first.
  SlowStats slow_stats;
  net::io_context slow_ioc;
  ssl::context slow_ctx(ssl::context::tls_client);
  std::thread slow_thread;
  if (slow.clients > 0) {
    slow_ctx.load_verify_file(argv[3]);
    slow_ctx.set_verify_mode(ssl::verify_peer);
    slow.prefix = "POST " + path + " HTTP/1.1\r\nHost: " + host +
                  "\r\nContent-Type: application/json\r\nX-Slow: ";
    tcp::resolver resolver(slow_ioc);
    const tcp::endpoint endpoint = *resolver.resolve(host, port).begin();
    for (int i = 0; i < slow.clients; ++i) {
      // Spread the first connects over half a second.
      std::make_shared<SlowConnection>(slow_ioc, slow_ctx, endpoint, slow, slow_stats)
          ->start(std::chrono::microseconds(500000L * i / slow.clients));
    }
    slow_thread = std::thread([&slow_ioc] { slow_ioc.run(); });
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    while (slow_stats.connected < slow.clients && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<long> errors{0};
  const auto start = Clock::now() + std::chrono::milliseconds(200);
  const long slow_closed_before = slow_stats.closed;
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(connections) / rate));

  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      net::io_context ioc;
      ssl::context ctx(ssl::context::tls_client);
      ctx.load_verify_file(argv[3]);
      ctx.set_verify_mode(ssl::verify_peer);
      beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
      tcp::resolver resolver(ioc);
      beast::get_lowest_layer(stream).connect(resolver.resolve(host, port));
      stream.handshake(ssl::stream_base::client);
      beast::flat_buffer buffer;
      std::vector<double> local;
      // Stagger the connections over one interval.
      auto next = start + interval * c / connections;
      while (next < end) {
        std::this_thread::sleep_until(next);
        http::request<http::string_body> req{http::verb::post, path, 11};
        req.set(http::field::host, host);
        req.set(http::field::content_type, "application/json");
        req.keep_alive(true);
        req.body() = body;
        req.prepare_payload();
        beast::error_code ec;
        http::write(stream, req, ec);
        http::response<http::string_body> res;
        if (!ec) {
          http::read(stream, buffer, res, ec);
        }
        if (ec || res.result_int() != 200 ||
            res.body().find("\"allowed\":true") == std::string::npos) {
          ++errors;
        } else {
          local.push_back(std::chrono::duration<double, std::milli>(Clock::now() - next).count());
        }
        next += interval;
      }
      std::lock_guard lock(mu);
      latencies_ms.insert(latencies_ms.end(), local.begin(), local.end());
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  const long slow_closed = slow_stats.closed - slow_closed_before;
  if (slow.clients > 0) {
    slow_stats.stopping = true;
    slow_ioc.stop();
    slow_thread.join();
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto pct = [&](double p) {
    if (latencies_ms.empty()) {
      return 0.0;
    }
    const auto i = static_cast<size_t>(p * static_cast<double>(latencies_ms.size() - 1));
    return latencies_ms[i];
  };
  std::printf("requests %zu errors %ld rate %.1f/s p50 %.3f ms p90 %.3f ms p99 %.3f ms max %.3f "
              "ms\n",
              latencies_ms.size(), errors.load(),
              static_cast<double>(latencies_ms.size()) / seconds, pct(0.5), pct(0.9), pct(0.99),
              latencies_ms.empty() ? 0.0 : latencies_ms.back());
  if (slow.clients > 0) {
    std::printf("slow clients %d: handshakes %ld, closed by the server during the run %ld, "
                "failed connects %ld, bytes answered %ld\n",
                slow.clients, slow_stats.connected.load(), slow_closed, slow_stats.failed.load(),
                slow_stats.answered.load());
  }
  return errors.load() == 0 ? 0 : 1;
}
