// An open-loop HTTPS load client for the webhook server: CONNECTIONS
// keep-alive connections POST one AdmissionReview each at a fixed total
// RATE for SECONDS, latency measured from each request's scheduled send time
// (so a stalled server is not hidden by coordinated omission). Prints
// requests, errors, achieved rate and p50/p90/p99/max latency.
//
//   load_client HOST PORT CA_FILE PATH BODY_FILE RATE SECONDS CONNECTIONS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc != 9) {
    std::cerr << "usage: load_client HOST PORT CA_FILE PATH BODY_FILE RATE SECONDS CONNECTIONS\n";
    return 2;
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

  std::mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<long> errors{0};
  const auto start = Clock::now() + std::chrono::milliseconds(200);
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
  return errors.load() == 0 ? 0 : 1;
}
