#pragma once

// The runner Job (docs/behaviour/jobs.md, security.md): one batch/v1 Job per operation,
// built as JSON for the API server. The one place that knows the pod's
// shape; test/runner/e2e_support builds its Jobs with it too.
//
// The pod: an init container `runner` from the runner image runs
// `/runner copy /captf/bin/runner` into the `bin` emptyDir; the main
// container `source` from the module image runs `/captf/bin/runner run`
// with the docs/behaviour/jobs.md arguments. Volumes: bin (emptyDir; RO in `source`), work
// (/captf/work, emptyDir), tmp (/tmp, emptyDir), config (/captf/config, RO:
// the per-run Secret, projected with the backup chunks for a restore),
// credentials (/var/run/captf/credentials, RO, the credential mirror, mode
// 0440: every key a file, byte for byte). The mirror's text keys are also
// environment variables, one secretKeyRef each (credential_env_keys; no
// envFrom: a binary value must never reach the environment,
// docs/decisions/manager-identity.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/decision.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/names.h"

namespace captf::lifecycle {

// Fixed paths of the image contract and the pod.
inline constexpr std::string_view kRunnerInImage = "/runner";
inline constexpr std::string_view kRunnerBinDir = "/captf/bin";
inline constexpr std::string_view kRunnerPath = "/captf/bin/runner";
inline constexpr std::string_view kRuntimePath = "/captf/runtime";
inline constexpr std::string_view kModulePath = "/captf/module";
inline constexpr std::string_view kProvidersPath = "/captf/providers";
inline constexpr std::string_view kWorkPath = "/captf/work";
inline constexpr std::string_view kConfigPath = "/captf/config";
inline constexpr std::string_view kCredentialsPath = "/var/run/captf/credentials";
inline constexpr std::string_view kSourceContainer = "source";
inline constexpr std::string_view kInitContainer = "runner";
// The margin between the grace period and the runner's --stop-timeout, for
// writing the result after stopping the runtime.
inline constexpr std::int64_t kStopTimeoutMargin = 30;

// sizeLimits of the pod's scratch emptyDirs, in MiB (docs/behaviour/jobs.md,
// volumes). A volume that outgrows its limit gets the pod evicted, so the
// Job fails; the limits bound what a module can take of the node's disk.
// The runner binary (about 25 MiB static).
inline constexpr std::int64_t kBinVolumeMiB = 64;
// The generated root, the CLI config, plan files and TF_DATA_DIR, where
// init unpacks every provider (from the image's mirror or the registry:
// one large cloud provider alone is several hundred MiB unpacked) and
// fetches remote modules.
inline constexpr std::int64_t kWorkVolumeMiB = 2048;
// TMPDIR: provider archives init downloads without a mirror, one at a
// time, and the runtime's temporary files.
inline constexpr std::int64_t kTmpVolumeMiB = 1024;
// Git sources: the fetched commit and its checkout.
inline constexpr std::int64_t kSourceVolumeMiB = 1024;

// Where the pod keeps a Git source's credentials (the secretRef Secret).
inline constexpr std::string_view kGitCredentialsPath = "/var/run/captf/git";

// A Git source (docs/decisions/git-sources.md): the runner fetches `commit`
// into contract::kGitCheckoutPath (an emptyDir) before it runs, and the
// module is `path` inside it.
struct GitFetch {
  std::string url; // canonical
  std::string commit;
  // refs/heads/<b> or refs/tags/<t>: fetched when the server will not serve
  // the commit by id; "" for a commit ref.
  std::string ref;
  std::string path;
  // The secretRef Secret, mounted at kGitCredentialsPath; "" for none.
  std::string secret;
};

struct JobBuildRequest {
  ObjectIdentity object{};
  // metadata.uid of the object (the Job's owner, and --event-object).
  std::string object_uid{};
  // The object's cluster.x-k8s.io/cluster-name label value (a
  // TerraformCluster: its Cluster's name). Used for labels and the backend
  // labels; "" omits the label (never for an object that has a Cluster).
  std::string cluster_name{};
  // jobName(...) of the decision.
  std::string job_name{};
  api::Operation operation = api::Operation::kApply;
  std::int32_t attempt = 1;
  // The image the `source` container runs: spec.source.image, or
  // `repo@sha256:<pinned>` where pinning applies (docs/behaviour/security.md#image-digest-pinning).
  std::string image{};
  // A Git source: `image` is its runtime image.
  std::optional<GitFetch> git{};
  // --image: the reference echoed in the result and events
  // (spec.source.image as written). Defaults to `image` when empty.
  std::string image_reference{};
  api::PullPolicy image_pull_policy = api::PullPolicy::kIfNotPresent;
  // --runner-image / $CAPTF_MANAGER_IMAGE (must contain /runner).
  std::string runner_image{};
  // resolveJobPolicy(...).
  EffectiveJobPolicy policy{};
  // The credential mirror Secret (`captf-creds-<identity>`): the
  // credentials volume and the Secret of every credential env entry.
  // Required.
  std::string credentials_secret{};
  // The mirror's keys that are also environment variables of the `source`
  // container (controllers::deliveryOf: text values under a valid name),
  // each a secretKeyRef to credentials_secret marked optional (a key a
  // rotation removed before the pod starts is then absent rather than
  // blocking the container). Rendered after the six fixed variables and
  // before jobs.env, in the given order; a key named like a fixed variable or
  // a jobs.env entry is left out (the Job's own value wins, as it did over
  // envFrom). Each must satisfy isEnvVarName.
  std::vector<std::string> credential_env_keys{};
  // The inputs hash the Job renders (decision.inputs_hash): the Job's
  // captf.io/inputs-hash annotation (omitted when empty) and --inputs-hash
  // when guarding.
  std::string inputs_hash{};
  // From the decision: guard flags, expect-plan, remediation, restore serial.
  JobOptions options{};
  // --force-unlock: the lock ID of a stale lock held by one of the object's
  // own finished runner pods (docs/behaviour/state.md#locks); "" when none.
  std::string force_unlock_id{};
  // --runner-events: pass --event-object and --job-name.
  bool runner_events = true;
  // With runner_events, the run reports (docs/decisions/run-reports.md):
  // --report-address, and the captf.io/report-token-hash annotation (the
  // token itself goes into the per-run Secret). Empty: no reports.
  std::string report_address{};
  std::string report_token_hash{};
  // Restore: the backup's chunk Secrets in chunk order, projected at
  // /captf/config/restore/<i> (their `tfstate` key), and the backup's
  // managed-resource count (--restore-chunks, --restore-resources).
  std::vector<std::string> restore_chunk_secrets{};
  std::int64_t restore_resources = 0;
  // terminationGracePeriodSeconds; the runner's --stop-timeout is this minus
  // kStopTimeoutMargin (600 ⇒ 570s). The manager always uses the default;
  // tests shorten it. Must exceed kStopTimeoutMargin.
  std::int64_t termination_grace_period_seconds = kTerminationGracePeriodSeconds;
};

// Whether `name` can name an environment variable of a pod on every API
// server: `[-._a-zA-Z][-._a-zA-Z0-9]*` (IsEnvVarName as it was before the
// RelaxedEnvironmentVariableValidation feature), at most 253 bytes (a Secret
// key's limit). A Secret key may also start with a digit; such a key is a
// file only.
bool isEnvVarName(std::string_view name);

// The runner arguments of docs/behaviour/jobs.md (after `/captf/bin/runner run`), each as
// `--flag=value`, in the table's order: --op, --bin, --image, --module,
// --providers, --workdir, --config, --lock-timeout=<n>s,
// --stop-timeout=<n>s, four --backend-config (secret_suffix, namespace,
// in_cluster_config=true, labels), then as applicable --force-unlock,
// --guard-deletes + --inputs-hash, --allow-deletes-hash, --expect-plan,
// --event-object + --job-name [+ --report-address], --restore-chunks + --restore-resources.
std::vector<std::string> runnerArgs(const JobBuildRequest& request);

// The Job: namespace of the object, name job_name, labels (op, attempt,
// captf.io/managed, cluster-name, owner-kind/name) on Job and pod,
// annotations (captf.io/inputs-hash, captf.io/drift-remediation,
// captf.io/approved-plan, captf.io/restore-serial as applicable), owner
// reference to the object (controller, blockOwnerDeletion), backoffLimit 0,
// no TTL, activeDeadlineSeconds, restartPolicy Never,
// terminationGracePeriodSeconds, serviceAccountName, imagePullSecrets, pod
// securityContext, the containers and volumes above. The scratch emptyDirs
// (bin, work, tmp, and source for Git) carry the sizeLimits above, and the
// `source` container requests their sum as ephemeral-storage unless the
// policy's resources name ephemeral-storage themselves (a request the
// scheduler reserves; a limit the request must not exceed).
//
// Errors (InvalidArgument, naming the field): empty job_name, object name,
// namespace, object_uid, image, runner_image or credentials_secret; a
// credential_env_keys entry that is not isEnvVarName or is repeated; a
// guarded apply without inputs_hash; a restore without chunk Secrets;
// guard/expect-plan options on an operation other than apply; a grace
// period not above the margin.
absl::StatusOr<nlohmann::json> buildJob(const JobBuildRequest& request);

} // namespace captf::lifecycle
