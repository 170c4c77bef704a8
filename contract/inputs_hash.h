#pragma once

// The inputs hash (`captf.io/inputs-hash`, docs/behaviour/inputs.md): what decides whether a
// mutable object re-applies, what a destructive-plan approval names, and
// what the adopted state carries.
//
// Value: "h2:" followed by the lower-case hex SHA-256 of the canonical JSON
// (contract/canonical_json.h) of this document:
//
//   {"contract": "v1alpha1",
//    "image":    <spec.source.image as written, never the resolved digest>,
//    "inputs":   <the role's rendered contract inputs>,
//    "role":     "cluster" | "machine" | "machinepool",
//    "scheme":   "h2",
//    "variables": {"sensitive": [<sorted names of sensitive variables>],
//                  "values":    {<name>: <value>, ...}}}
//
// "variables" is present only when the object sets at least one user
// variable, so objects without variables hash exactly as they would without
// the feature. Everything rendered is hashed, with one exception: a pool
// whose `autoscaling.enabled` is true hashes `replicas` as 0, because the
// autoscaler owns it. See docs/decisions/contract-hashes.md.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "contract/render.h"

namespace captf::contract {

inline constexpr std::string_view kInputsHashAnnotation = "captf.io/inputs-hash";
// Bumping the scheme re-applies every provisioned mutable object once.
inline constexpr std::string_view kInputsHashScheme = "h2";

enum class HashView {
  // What re-apply decisions and adopted state use.
  kApply,
  // What a destructive-plan approval covers: as kApply, but for pools
  // `bootstrap_data` is cleared (""), because it rotates about every 7.5
  // minutes and an approval must outlive a rotation.
  kApproval,
};

// Hashes exactly what renderRoot would render for `request` (the request is
// validated the same way), plus the image. Errors: InvalidArgument from
// validation, which includes a fractional number anywhere in the inputs or
// user variables (such inputs are unhashable).
absl::StatusOr<std::string> inputsHash(const RenderRequest& request, std::string_view image,
                                       HashView view = HashView::kApply);

} // namespace captf::contract
