#pragma once

// How HttpsServer (https_server.h) frames one HTTP/1.1 request: a Boost.Beast
// parser with the server's header and body limits
// (docs/decisions/webhooks-server.md). The server makes one per request; the
// request framing fuzz target (test/manager/kube/http_request_fuzz.cc) makes
// the same one, so what it checks is what the server runs.

#include <cstddef>
#include <memory>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace captf::kube {

// A request's start line and header fields together, at most (beyond:
// http::error::header_limit, and the connection is closed).
inline constexpr std::size_t kMaxRequestHeaderBytes = std::size_t{64} * 1024U;

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// A parser for the next request of a connection; a body over
// `max_body_bytes` (ServerOptions::max_body_bytes) fails with
// http::error::body_limit, which the server answers with 413.
inline std::unique_ptr<RequestParser> newRequestParser(std::size_t max_body_bytes) {
  auto parser = std::make_unique<RequestParser>();
  parser->header_limit(kMaxRequestHeaderBytes);
  parser->body_limit(max_body_bytes);
  return parser;
}

} // namespace captf::kube
