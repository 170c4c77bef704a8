#include "manager/kube/patch.h"

#include "absl/strings/str_cat.h"

namespace captf::kube {
namespace {

Json mergeDiff(const Json& original, const Json& modified) {
  Json patch = Json::object();
  for (const auto& [key, value] : original.items()) {
    if (!modified.contains(key)) {
      patch[key] = nullptr;
    }
  }
  for (const auto& [key, value] : modified.items()) {
    auto it = original.find(key);
    // NOLINTNEXTLINE(bugprone-branch-clone): a new key and a changed one both take the value.
    if (it == original.end()) {
      patch[key] = value;
    } else if (it->is_object() && value.is_object()) {
      Json nested = mergeDiff(*it, value);
      if (!nested.empty()) {
        patch[key] = std::move(nested);
      }
    } else if (*it != value) {
      patch[key] = value;
    }
  }
  return patch;
}

} // namespace

Json createMergePatch(const Json& original, const Json& modified, OptimisticLock lock) {
  Json patch =
      original.is_object() && modified.is_object() ? mergeDiff(original, modified) : modified;
  if (lock == OptimisticLock::kYes) {
    patch["metadata"]["resourceVersion"] = meta::resourceVersion(original);
  }
  return patch;
}

Json applyMergePatch(Json target, const Json& patch) {
  target.merge_patch(patch);
  return target;
}

std::string escapePointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string jsonPointer(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& token : tokens) {
    absl::StrAppend(&out, "/", escapePointerToken(token));
  }
  return out;
}

JsonPatch& JsonPatch::add(std::string path, Json value) {
  operations_.push_back({{"op", "add"}, {"path", std::move(path)}, {"value", std::move(value)}});
  return *this;
}

JsonPatch& JsonPatch::remove(std::string path) {
  operations_.push_back({{"op", "remove"}, {"path", std::move(path)}});
  return *this;
}

JsonPatch& JsonPatch::replace(std::string path, Json value) {
  operations_.push_back(
      {{"op", "replace"}, {"path", std::move(path)}, {"value", std::move(value)}});
  return *this;
}

JsonPatch& JsonPatch::test(std::string path, Json value) {
  operations_.push_back({{"op", "test"}, {"path", std::move(path)}, {"value", std::move(value)}});
  return *this;
}

JsonPatch& JsonPatch::move(std::string from, std::string path) {
  operations_.push_back({{"op", "move"}, {"from", std::move(from)}, {"path", std::move(path)}});
  return *this;
}

JsonPatch& JsonPatch::copy(std::string from, std::string path) {
  operations_.push_back({{"op", "copy"}, {"from", std::move(from)}, {"path", std::move(path)}});
  return *this;
}

JsonPatch JsonPatch::diff(const Json& original, const Json& modified) {
  JsonPatch patch;
  patch.operations_ = Json::diff(original, modified);
  return patch;
}

absl::StatusOr<Json> applyJsonPatch(const Json& target, const Json& patch) {
  try {
    return target.patch(patch);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("JSON patch failed: ", e.what()));
  }
}

} // namespace captf::kube
