#pragma once

// Field descriptions of WorkspaceSpec and WorkspaceStatus, spliced into the
// spec and status of each workload kind. Internal to manager/api's .cc files.

#include <string>
#include <string_view>
#include <tuple>

#include "manager/api/describe.h"
#include "manager/api/workspace.h"

namespace captf::api::workspace_internal {

// `mutability` is appended to the documentation of the fields whose
// mutability differs per kind (for example " Immutable after creation.").
inline auto workspaceSpecFields(std::string_view mutability) {
  const std::string m(mutability);
  return std::tuple{
      field("source", &WorkspaceSpec::source).required().doc("The module image to run." + m),
      field("jobs", &WorkspaceSpec::jobs).doc("How runner Jobs are built. Always mutable."),
      field("variables", &WorkspaceSpec::variables)
          .doc("Values of the role module's own input variables, as a JSON object. Each key "
               "names a module variable (a Terraform identifier); names starting with captf_, "
               "the role's contract inputs and module meta-arguments are reserved. Inline "
               "values win over variablesFrom. A key the module does not declare fails the "
               "apply." +
               m)
          .minProperties(1)
          .maxProperties(256),
      field("variablesFrom", &WorkspaceSpec::variables_from)
          .doc("ConfigMaps and Secrets whose keys become module variables, in list order: a "
               "later source wins on the same key, inline variables win over all." +
               m)
          .items(1, 16),
  };
}

inline auto workspaceStatusFields() {
  return std::tuple{
      field("conditions", &WorkspaceStatus::conditions)
          .doc("Current state of the object. Ready is mirrored by Cluster API into the owner's "
               "InfrastructureReady.")
          .maxItems(32)
          .listMapKey("type"),
      field("initialization", &WorkspaceStatus::initialization)
          .doc("Cluster API's initialization status (the provisioned latch)."),
      field("observedGeneration", &WorkspaceStatus::observed_generation)
          .doc("The metadata.generation last reconciled.")
          .minimum(1),
      field("activeJob", &WorkspaceStatus::active_job).doc("The Job currently running, if any."),
      field("lastRun", &WorkspaceStatus::last_run).doc("The most recently completed Job."),
      field("lastDriftCheck", &WorkspaceStatus::last_drift_check)
          .doc("When the last successful drift check completed."),
      field("lastRefresh", &WorkspaceStatus::last_refresh)
          .doc("When the last refresh or drift completed, or the last apply that gave a "
               "definite health reading."),
      field("pendingRefreshes", &WorkspaceStatus::pending_refreshes)
          .doc("Consecutive health samples reading pending; spaces refreshes 30s, 1m, 2m, 4m, "
               "at most 5m.")
          .minimum(1),
      field("observedStateSerial", &WorkspaceStatus::observed_state_serial)
          .doc("The state serial the outputs were read from.")
          .minimum(1),
      field("stateSecretSuffix", &WorkspaceStatus::state_secret_suffix)
          .doc("Suffix of the state Secrets (informational; derived, never read back).")
          .length(1, 63),
      field("source", &WorkspaceStatus::source).doc("What the last Job actually ran."),
      field("stateBackups", &WorkspaceStatus::state_backups)
          .doc("State backups, newest first.")
          .items(1, 16),
  };
}

// Fields of every top-level kind: apiVersion, kind, metadata.
template <class T> auto objectFields() {
  Schema meta;
  meta.type = Schema::Type::kObject;
  return std::tuple{
      field("apiVersion", &T::api_version)
          .doc("APIVersion defines the versioned schema of this representation of an object. "
               "Servers should convert recognized schemas to the latest internal value, and may "
               "reject unrecognized values."),
      field("kind", &T::kind)
          .doc("Kind is a string value representing the REST resource this object represents. "
               "Servers may infer this from the endpoint the client submits requests to. Cannot "
               "be updated. In CamelCase."),
      field("metadata", &T::metadata).schemaOverride(meta),
  };
}

} // namespace captf::api::workspace_internal
