#pragma once

// Identity resolution and the credential mirror (docs/behaviour/identities.md#resolution,
// docs/behaviour/identities.md) for one workload object, each reconcile after the preamble:
// IdentityAllowed, then CredentialsMirrored. The source Secret and the
// namespace are read straight from the API server (never cached); the
// mirror lives in the main cache (captf.io/managed=true).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/kube/client.h"
#include "manager/kube/events.h"

namespace captf::controllers {

class CaptfMetrics;

struct ConditionResult {
  std::string status; // "True" | "False" | "Unknown"
  std::string reason;
  std::string message;

  bool isTrue() const { return status == "True"; }
};

inline ConditionResult conditionResult(const char* status, std::string_view reason,
                                       std::string message) {
  return ConditionResult{status, std::string(reason), std::move(message)};
}

// Why a credential key is a file only, not also an environment variable.
enum class FileOnlyReason {
  // The value is not valid UTF-8, holds a NUL byte, or is not base64: a
  // process environment cannot carry it (a NUL ends the value; runc and
  // Go's exec refuse it outright) and a runtime reading it as text would get
  // other bytes than the Secret holds.
  kBinaryValue,
  // The key is a valid Secret key but no valid environment variable name
  // (lifecycle::isEnvVarName), e.g. it starts with a digit.
  kNotAnEnvName,
};

std::string_view fileOnlyReasonName(FileOnlyReason reason);

struct FileOnlyKey {
  std::string key;
  FileOnlyReason reason;

  bool operator==(const FileOnlyKey&) const = default;
};

// How the keys of a credential Secret reach the Job pod
// (docs/decisions/manager-identity.md, "Delivery"): every key is a file
// /var/run/captf/credentials/<key>, byte for byte; a key is also an
// environment variable (a secretKeyRef) only when its value is text (valid
// UTF-8 without NUL) and the key is a valid variable name. Key lists are in
// key order.
struct CredentialDelivery {
  std::vector<std::string> files;     // every key
  std::vector<std::string> env;       // the keys that are also variables
  std::vector<FileOnlyKey> file_only; // files \ env, with the reason

  bool operator==(const CredentialDelivery&) const = default;
};

// The delivery of `secret` (a v1 Secret as JSON; its base64 `data`). Pure;
// never fails: what cannot be decoded is a file only.
CredentialDelivery deliveryOf(const nlohmann::json& secret);

struct IdentityResult {
  ConditionResult allowed;  // IdentityAllowed
  ConditionResult mirrored; // CredentialsMirrored
  std::string identity;     // effective identity name ("" when none)
  std::string mirror_name;  // captf-creds-<identity> when mirrored
  // When mirrored: how the mirror's keys reach the Job (the source's data,
  // which the mirror now holds byte for byte).
  CredentialDelivery delivery;
  // The captf_identity_denied_total reason when denied ("notfound",
  // "namespace"); the caller counts it on the condition's transition.
  std::string denied;
  // A transient API error (IdentityCheckFailed or a failed mirror write):
  // the reconcile returns it after patching status, and is retried.
  absl::Status transient;
};

// "captf-creds-<identity>"; longer than 253 characters: the prefix plus the
// first 16 hex characters of sha256(identity).
std::string mirrorSecretName(const std::string& identity);

// The hash annotated on the mirror (captf.io/source-hash): sha256 over the
// source Secret's data keys and (base64) values in key order.
std::string sourceHash(const nlohmann::json& data);

// Whether `ns` (with `namespace_labels`) is allowed by an identity's
// spec.allowedNamespaces (list ∪ selector; unset: none; selector {}: all).
// Errors: an unparsable selector.
absl::StatusOr<bool> namespaceAllowed(const nlohmann::json& allowed_namespaces,
                                      const std::string& ns,
                                      const nlohmann::json& namespace_labels);

// How often a write of the shared mirror is tried when it loses a race.
inline constexpr int kMirrorWriteAttempts = 5;

class IdentityResolver {
public:
  // `cached` reads identities and mirrors, `api` reads the source Secret and
  // the namespace and writes the mirror. All must outlive the resolver.
  IdentityResolver(kube::Client& cached, kube::Client& api, kube::EventRecorder& events,
                   CaptfMetrics& metrics)
      : cached_(cached), api_(api), events_(events), metrics_(metrics) {}

  // Resolves `identity` (empty: none) for `object` (a workload object with
  // apiVersion, kind, metadata incl. uid) and maintains the mirror in the
  // object's namespace, adding the object as a non-blocking owner.
  IdentityResult resolve(const nlohmann::json& object, const std::string& identity);

  // Final cleanup (docs/behaviour/lifecycle.md): removes `object` from its namespace's mirror
  // owners; deletes the mirror when no owner is left (event MirrorRemoved).
  // Both write the one mirror every object of the namespace shares: an
  // owner reference is added or dropped by a strategic merge patch (merged
  // by uid, so concurrent owners never conflict); new data and the final
  // delete are guarded by the resourceVersion, and a lost race (Conflict,
  // AlreadyExists) reads the API server's copy and tries again,
  // kMirrorWriteAttempts times in all. resolve's first read is the cache's.
  absl::Status release(const nlohmann::json& object, const std::string& identity);

private:
  ConditionResult mirror(const nlohmann::json& object, const std::string& identity,
                         const nlohmann::json& source, std::string& name, absl::Status& transient);

  kube::Client& cached_;
  kube::Client& api_;
  kube::EventRecorder& events_;
  CaptfMetrics& metrics_;
};

} // namespace captf::controllers
