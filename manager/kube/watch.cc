#include "manager/kube/watch.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace captf::kube {

void JsonStreamDecoder::feed(std::string_view bytes) {
  if (start_ > 0 && start_ == buffer_.size()) {
    buffer_.clear();
    scan_ -= start_;
    start_ = 0;
  } else if (start_ > (1 << 16) && start_ > buffer_.size() / 2) {
    // Compact once the consumed prefix dominates.
    buffer_.erase(0, start_);
    scan_ -= start_;
    start_ = 0;
  }
  buffer_.append(bytes);
}

absl::StatusOr<std::optional<std::string>> JsonStreamDecoder::next() {
  if (failed_) {
    return absl::InvalidArgumentError("watch stream decoder failed earlier");
  }
  while (scan_ < buffer_.size()) {
    char c = buffer_[scan_];
    if (depth_ == 0) {
      if (std::isspace(static_cast<unsigned char>(c)) != 0) {
        ++scan_;
        start_ = scan_;
        continue;
      }
      if (c != '{') {
        failed_ = true;
        return absl::InvalidArgumentError(absl::StrCat("watch stream: expected '{' at byte ", scan_,
                                                       ", got '", absl::string_view(&c, 1), "'"));
      }
      start_ = scan_;
    }
    ++scan_;
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      --depth_;
      if (depth_ == 0) {
        std::string document = buffer_.substr(start_, scan_ - start_);
        start_ = scan_;
        return std::optional<std::string>(std::move(document));
      }
    }
  }
  if (depth_ > 0 && scan_ - start_ > max_document_bytes_) {
    failed_ = true;
    return absl::InvalidArgumentError(
        absl::StrCat("watch stream: event larger than ", max_document_bytes_, " bytes"));
  }
  return std::optional<std::string>();
}

std::string_view watchEventTypeName(WatchEventType type) {
  switch (type) {
  case WatchEventType::kAdded:
    return "ADDED";
  case WatchEventType::kModified:
    return "MODIFIED";
  case WatchEventType::kDeleted:
    return "DELETED";
  case WatchEventType::kBookmark:
    return "BOOKMARK";
  case WatchEventType::kError:
    return "ERROR";
  }
  return "UNKNOWN";
}

absl::StatusOr<WatchEvent> parseWatchEvent(std::string_view document) {
  auto parsed = parseJson(document);
  if (!parsed.ok()) {
    return parsed.status();
  }
  Json& doc = *parsed;
  auto type = doc.find("type");
  auto object = doc.find("object");
  if (type == doc.end() || !type->is_string() || object == doc.end() || !object->is_object()) {
    return absl::InvalidArgumentError("watch event without type or object");
  }
  WatchEvent event;
  const auto& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown watch event type \"", name, "\""));
  }
  event.object = std::move(*object);
  return event;
}

absl::StatusOr<std::optional<WatchEvent>> HttpEventStream::next() {
  while (true) {
    auto document = decoder_.next();
    if (!document.ok()) {
      return document.status();
    }
    if (*document) {
      auto event = parseWatchEvent(**document);
      if (!event.ok()) {
        return event.status();
      }
      if (as_ && event->type != WatchEventType::kError && event->object.is_object()) {
        event->object["apiVersion"] = as_->apiVersion();
        event->object["kind"] = as_->kind;
      }
      return std::optional<WatchEvent>(*std::move(event));
    }
    if (ended_) {
      if (decoder_.buffered() > 0) {
        return absl::UnavailableError("watch stream ended inside an event");
      }
      return std::optional<WatchEvent>();
    }
    auto chunk = body_->read();
    if (!chunk.ok()) {
      return chunk.status();
    }
    if (chunk->empty()) {
      ended_ = true;
      continue;
    }
    decoder_.feed(*chunk);
  }
}

} // namespace captf::kube
