#pragma once

// Watch streams: framing of the API server's stream of JSON watch events
// (which may split or join events at any byte), and event parsing.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "manager/kube/object.h"
#include "manager/kube/transport.h"

namespace captf::kube {

// Splits a byte stream of concatenated JSON objects into documents, however
// the bytes arrive. Tracks strings and escapes, so braces inside strings do
// not confuse it. Not thread-safe.
class JsonStreamDecoder {
public:
  explicit JsonStreamDecoder(size_t max_document_bytes = 64 << 20)
      : max_document_bytes_(max_document_bytes) {}

  void feed(std::string_view bytes);
  // The next complete document, nullopt when more bytes are needed.
  // InvalidArgument when the stream is not a sequence of objects or a
  // document exceeds the limit; the decoder is then unusable.
  absl::StatusOr<std::optional<std::string>> next();
  // Bytes received but not yet returned (a partial document).
  size_t buffered() const { return buffer_.size() - start_; }

private:
  std::string buffer_;
  size_t start_ = 0; // start of the current document in buffer_
  size_t scan_ = 0;  // how far the current document was scanned
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  bool failed_ = false;
  const size_t max_document_bytes_;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  Json object; // the object; a metav1.Status for kError
};

// Parses one watch event document ({"type": ..., "object": ...}).
absl::StatusOr<WatchEvent> parseWatchEvent(std::string_view document);
std::string_view watchEventTypeName(WatchEventType type);

// A source of watch events. Not thread-safe; stopped by the stop token
// given when it was opened.
class EventStream {
public:
  virtual ~EventStream() = default;
  // The next event; nullopt when the server ended the watch cleanly (its
  // timeout): the caller watches again from the last resourceVersion.
  virtual absl::StatusOr<std::optional<WatchEvent>> next() = 0;
};

// An EventStream over an HTTP body.
class HttpEventStream final : public EventStream {
public:
  // `as`: a metadata-only watch's objects (PartialObjectMetadata) are
  // handed out as this kind, as a list's items are.
  explicit HttpEventStream(std::unique_ptr<BodyStream> body,
                           std::optional<GroupVersionKind> as = std::nullopt)
      : body_(std::move(body)), as_(std::move(as)) {}
  absl::StatusOr<std::optional<WatchEvent>> next() override;

private:
  std::unique_ptr<BodyStream> body_;
  std::optional<GroupVersionKind> as_;
  JsonStreamDecoder decoder_;
  bool ended_ = false;
};

} // namespace captf::kube
