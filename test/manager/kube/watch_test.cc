#include <gtest/gtest.h>

#include "manager/kube/watch.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"metadata":{"name":"a {\"}","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"metadata":{"name":"b\\","resourceVersion":"2"},"x":[{},[]]}})"
    R"(  {"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}})"
    "\n";

std::vector<std::string> decodeAll(JsonStreamDecoder& decoder) {
  std::vector<std::string> out;
  while (true) {
    auto next = decoder.next();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !*next) {
      return out;
    }
    out.push_back(**next);
  }
}

TEST(JsonStreamDecoderTest, FramesWhateverTheChunkBoundaries) {
  for (size_t chunk = 1; chunk <= kStream.size(); ++chunk) {
    JsonStreamDecoder decoder;
    std::vector<std::string> documents;
    for (size_t pos = 0; pos < kStream.size(); pos += chunk) {
      decoder.feed(kStream.substr(pos, chunk));
      for (auto& document : decodeAll(decoder)) {
        documents.push_back(std::move(document));
      }
    }
    ASSERT_EQ(documents.size(), 3U) << "chunk size " << chunk;
    auto first = parseWatchEvent(documents[0]);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(meta::name(first->object), "a {\"}");
    auto second = parseWatchEvent(documents[1]);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(second->type, WatchEventType::kModified);
    EXPECT_EQ(meta::name(second->object), "b\\");
    EXPECT_EQ(decoder.buffered(), 0U);
  }
}

TEST(JsonStreamDecoderTest, KeepsPartialDocuments) {
  JsonStreamDecoder decoder;
  decoder.feed(R"({"type":"ADDED","obj)");
  auto next = decoder.next();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_GT(decoder.buffered(), 0U);
}

TEST(JsonStreamDecoderTest, RejectsNonObjectsAndOversizedDocuments) {
  JsonStreamDecoder garbage;
  garbage.feed("<html>");
  EXPECT_FALSE(garbage.next().ok());
  EXPECT_FALSE(garbage.next().ok()) << "stays failed";

  JsonStreamDecoder small(16);
  small.feed(R"({"type":"ADDED","object":{"metadata":{}}})");
  auto next = small.next();
  ASSERT_TRUE(next.ok()) << "a complete document is returned even when large";
  small.feed(R"({"type":"ADDED","object":{"metadata":)");
  EXPECT_FALSE(small.next().ok());
}

TEST(ParseWatchEventTest, TypesAndErrors) {
  auto error = parseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->type, WatchEventType::kError);
  EXPECT_EQ(error->object["code"], 410);
  EXPECT_FALSE(parseWatchEvent(R"({"type":"EXPLODED","object":{}})").ok());
  EXPECT_FALSE(parseWatchEvent(R"({"type":"ADDED"})").ok());
  EXPECT_FALSE(parseWatchEvent("{").ok());
}

// A watch event carries an object, a Secret's data included: a malformed
// one is named by offset and kind, never quoted (a number out of range is
// an error, not an escaping exception).
TEST(ParseWatchEventTest, ErrorsNeverQuoteTheEvent) {
  const std::string data = "c2VjcmV0LUNBTkFSWS03ZjNh";
  const std::string open = R"({"type":"ADDED","object":{"kind":"Secret","data":{"token":")";
  for (const std::string& document :
       {open + data, open + data + R"(\q"}}})", open + data + R"("},"n":1e999}})"}) {
    auto event = parseWatchEvent(document);
    ASSERT_FALSE(event.ok()) << document;
    const std::string message(event.status().message());
    EXPECT_NE(message.find("invalid JSON"), std::string::npos) << message;
    EXPECT_EQ(message.find(data.substr(0, 8)), std::string::npos) << message;
  }
}

TEST(HttpEventStreamTest, DecodesABodyInSmallPieces) {
  testing::FakeTransport transport;
  transport.respond(200, kStream);
  auto body = transport.open({}, std::stop_token());
  ASSERT_TRUE(body.ok());
  HttpEventStream stream(*std::move(body));
  std::vector<WatchEventType> types;
  while (true) {
    auto event = stream.next();
    ASSERT_TRUE(event.ok()) << event.status();
    if (!*event) {
      break;
    }
    types.push_back((*event)->type);
  }
  EXPECT_EQ(types, (std::vector<WatchEventType>{WatchEventType::kAdded, WatchEventType::kModified,
                                                WatchEventType::kBookmark}));
}

TEST(HttpEventStreamTest, TruncatedEventIsAnError) {
  testing::FakeTransport transport;
  transport.respond(200, R"({"type":"ADDED","object":{)");
  auto body = transport.open({}, std::stop_token());
  ASSERT_TRUE(body.ok());
  HttpEventStream stream(*std::move(body));
  auto event = stream.next();
  EXPECT_FALSE(event.ok());
  EXPECT_EQ(event.status().code(), absl::StatusCode::kUnavailable);
}

} // namespace
} // namespace captf::kube
