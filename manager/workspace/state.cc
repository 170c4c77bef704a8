#include "manager/workspace/state.h"

#include <utility>

#include "contract/strings.h"
#include "manager/api/keys.h"
#include "manager/workspace/json_util.h"
#include "manager/workspace/names.h"

namespace captf::workspace {
namespace {

using contract::strCat;

StateStatus statusOf(const absl::Status& status) {
  switch (contract::stateProblem(status)) {
  case contract::StateProblem::kInconsistent:
    return StateStatus::kInconsistent;
  case contract::StateProblem::kEncrypted:
    return StateStatus::kEncrypted;
  case contract::StateProblem::kCorrupt:
  case contract::StateProblem::kNone:
    return StateStatus::kCorrupt;
  }
  return StateStatus::kCorrupt;
}

ReadState failed(ReadState read, StateStatus status, std::string message) {
  read.status = status;
  read.message = std::move(message);
  read.chunks.clear();
  return read;
}

} // namespace

ReadState readState(std::string_view suffix, const std::vector<nlohmann::json>& secrets) {
  const std::string base = stateSecretName(suffix);
  ReadState read;
  std::vector<contract::NamedChunk> named;
  for (const nlohmann::json& secret : secrets) {
    if (internal::label(secret, kBackendLabelSuffix) != std::string(suffix)) {
      continue;
    }
    const std::string name = internal::nameOf(secret);
    read.secret_names.push_back(name);
    if (name == base) {
      read.inputs_hash = internal::annotation(secret, api::kAnnotationInputsHash).value_or("");
    }
    bool bad_encoding = false;
    auto data = internal::secretData(secret, kStateDataKey, &bad_encoding);
    if (!data) {
      return failed(std::move(read), StateStatus::kInconsistent,
                    bad_encoding ? strCat("Secret ", name, ": the ", kStateDataKey,
                                          " key is not valid base64")
                                 : strCat("Secret ", name, " has no ", kStateDataKey,
                                          " key (the backend may be writing it)"));
    }
    read.compressed_bytes += static_cast<std::int64_t>(data->size());
    named.push_back({name, *std::move(data)});
  }
  if (named.empty()) {
    return read;
  }
  const std::size_t count = named.size();
  auto ordered = contract::orderChunks(base, std::move(named));
  if (!ordered.ok()) {
    return failed(std::move(read), statusOf(ordered.status()),
                  strCat(base, ": ", ordered.status().message()));
  }
  read.secret_names.clear();
  for (std::size_t i = 0; i < count; ++i) {
    read.secret_names.push_back(stateChunkName(suffix, i));
  }
  // Gunzipped and summarized in one pass: the state JSON is never held.
  auto summary = contract::summarizeState(*ordered);
  if (!summary.ok()) {
    return failed(std::move(read), statusOf(summary.status()),
                  strCat(base, ": ", summary.status().message()));
  }
  read.status = StateStatus::kRead;
  read.summary = *std::move(summary);
  read.chunks = *std::move(ordered);
  return read;
}

StateVerdict classifyState(const ReadState& read, const KindTraits& traits,
                           Provisioned provisioned) {
  switch (read.status) {
  case StateStatus::kNotFound:
    return provisioned == Provisioned::kYes ? StateVerdict::kLost : StateVerdict::kNotFound;
  case StateStatus::kRead:
    if (provisioned == Provisioned::kYes && traits.immutable_inputs && read.inputs_hash.empty()) {
      return StateVerdict::kLost;
    }
    return StateVerdict::kRead;
  case StateStatus::kInconsistent:
    return StateVerdict::kInconsistent;
  case StateStatus::kEncrypted:
    return StateVerdict::kEncrypted;
  case StateStatus::kCorrupt:
    return StateVerdict::kCorrupt;
  }
  return StateVerdict::kCorrupt;
}

std::string_view stateReason(StateVerdict verdict) {
  switch (verdict) {
  case StateVerdict::kNotFound:
    return "StateNotFound";
  case StateVerdict::kRead:
    return "StateRead";
  case StateVerdict::kInconsistent:
    return "StateInconsistent";
  case StateVerdict::kEncrypted:
    return "StateEncrypted";
  case StateVerdict::kCorrupt:
    return "StateCorrupt";
  case StateVerdict::kLost:
    return "StateLost";
  case StateVerdict::kLocked:
    return "StateLocked";
  }
  return "StateCorrupt";
}

std::string_view stateMetricReason(StateVerdict verdict) {
  switch (verdict) {
  case StateVerdict::kNotFound:
  case StateVerdict::kRead:
    return "";
  case StateVerdict::kInconsistent:
    return "inconsistent";
  case StateVerdict::kEncrypted:
    return "encrypted";
  case StateVerdict::kCorrupt:
    return "corrupt";
  case StateVerdict::kLost:
    return "lost";
  case StateVerdict::kLocked:
    return "locked";
  }
  return "corrupt";
}

std::string_view stateEventReason(StateVerdict verdict) {
  switch (verdict) {
  case StateVerdict::kNotFound:
  case StateVerdict::kRead:
    return "";
  case StateVerdict::kInconsistent:
  case StateVerdict::kEncrypted:
  case StateVerdict::kCorrupt:
    return "StateUnreadable";
  case StateVerdict::kLost:
    return "StateLost";
  case StateVerdict::kLocked:
    return "StateLocked";
  }
  return "StateUnreadable";
}

bool stateAllowsJobs(StateVerdict verdict) {
  return verdict == StateVerdict::kNotFound || verdict == StateVerdict::kRead;
}

std::string stateMessage(StateVerdict verdict, const ReadState& read, std::string_view suffix) {
  const std::string base = stateSecretName(suffix);
  switch (verdict) {
  case StateVerdict::kNotFound:
    return strCat("No state Secret ", base, " yet; the first apply creates it");
  case StateVerdict::kRead:
    return strCat("State serial ", read.summary.serial, " read from ", read.secret_names.size(),
                  " Secret(s) ", base, "*");
  case StateVerdict::kInconsistent:
    return strCat("State in ", base,
                  " is inconsistent (may be transient mid-write): ", read.message);
  case StateVerdict::kEncrypted:
    return strCat("State in ", base,
                  " is encrypted with OpenTofu client-side state encryption, which CAPTF does "
                  "not support: ",
                  read.message);
  case StateVerdict::kCorrupt:
    return strCat("State in ", base, " is corrupt: ", read.message);
  case StateVerdict::kLost:
    if (read.status == StateStatus::kNotFound) {
      return strCat("The object is provisioned but its state Secret ", base,
                    " is missing; no Job runs until the state is restored (annotate ",
                    api::kAnnotationRestoreState, "=<serial>)");
    }
    return strCat("The object is provisioned but its state Secret ", base, " carries no ",
                  api::kAnnotationInputsHash,
                  " annotation; no Job runs until the state is "
                  "restored (annotate ",
                  api::kAnnotationRestoreState, "=<serial>)");
  case StateVerdict::kLocked:
    return read.message;
  }
  return read.message;
}

} // namespace captf::workspace
