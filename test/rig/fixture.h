#pragma once

// The rig as a test fixture. A test binary shares one rig: the first call to
// shared() runs `test/rig/rig up` in a private directory (owned by this
// process, so the rig tears itself down even when the binary crashes) and
// every later call returns the same Env. The rig is stopped at exit; its logs
// are kept when a test failed.

#include <map>
#include <string>
#include <vector>

#include <sys/types.h>

namespace captf::rig {

// What a test needs running. Each tier includes everything of the ones before.
enum class Tier {
  kIntegration, // etcd + kube-apiserver (RBAC on)
  kE2e,         // + kube-controller-manager, the process kubelet, the OCI registry, tofu
  kCapi,        // + Cluster API's core manager (CRDs, webhooks) and clusterctl
  kInstall,     // kE2e + cert-manager; Cluster API built but not running: the binary
                // installs it with clusterctl (so it has all of kCapi once it did)
};

struct Env {
  std::string dir;             // the rig's private directory
  std::string kubeconfig;      // admin user (group system:masters)
  std::string server;          // https://127.0.0.1:PORT
  std::string ca_file;         // the API server's serving CA (PEM)
  std::string kubectl;         // path of the rig's kubectl
  std::string tofu;            // path of the rig's tofu (kE2e)
  std::string registry;        // host:port of the local OCI registry (kE2e)
  std::string clusterctl;      // path of clusterctl (kCapi)
  std::string promtool;        // path of promtool (every tier; see tools())
  std::string prometheus;      // path of prometheus (every tier)
  std::string git_https;       // the Git server (kE2e, test/rig/git_repo.h): https://127.0.0.1:PORT
  std::string git_user;        // git_https's basic-auth user (random per rig)
  std::string git_password;    // and password (random per rig)
  std::string git_repos;       // absolute directory of the bare repositories NAME.git
  std::string git_ssh;         // ssh://USER@127.0.0.1:PORT (sshd); + git_repos/NAME.git is a URL
  std::string git_ssh_key;     // the client's private key (OpenSSH format)
  std::string git_known_hosts; // "[127.0.0.1]:PORT ssh-ed25519 AAAA…"
  std::map<std::string, std::string> vars; // every export of DIR/env
};

// Starts the rig shared by this binary (once) and returns it. Exits the binary
// with the rig's one-line cause when it cannot start, because no test of the
// tier can run without it. Thread-safe.
const Env& shared(Tier tier);

// The binaries the rig builds that need no running component, for tests
// that run one of them without starting a rig (test/rig/build/prometheus.sh).
struct Tools {
  std::string promtool;
  std::string prometheus;
  std::string promql_names; // test/rig/promql: Prometheus's PromQL parser as a filter
};

// Builds what the rig's cache lacks (once per version; `test/rig/rig build`
// has done it already in CI) and returns the paths. Exits the binary with the
// build's one-line cause when it fails: no test that asked can run without
// them. Thread-safe.
const Tools& tools();

// A second rig, for the tests that need two control planes (clusterctl
// move). It stops when this process exits; its directory stays.
Env another(Tier tier);

struct CommandResult {
  int exit_code = -1;
  std::string output; // stdout and stderr, interleaved
};

// Runs argv (no shell) with optional standard input and extra environment.
CommandResult run(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                  const std::map<std::string, std::string>& extra_env = {});

// Starts `argv` (argv[0] a path) in the background with this process's
// environment plus `extra_env` ("NAME=value", replacing an inherited
// variable of that name), stderr appended to `log` and
// stdout to `stdout_fd` (-1: the log too). Returns the pid, or -1 when it
// cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::vector<std::string>& extra_env = {}, int stdout_fd = -1);

// The first line of a process's output that a sanitizer (ASan, LSan, UBSan,
// TSan) wrote; "" when none.
std::string sanitizerReport(const std::string& output);

// A file's bytes; empty when it cannot be read (the assertion on its
// content then names what is missing).
std::string readFile(const std::string& path);

// Runs the rig's kubectl as the admin user.
CommandResult kubectl(const Env& env, const std::vector<std::string>& args,
                      const std::string& stdin_data = "");

// Writes a kubeconfig for a user NAME in GROUPS signed by the rig's client CA
// and returns its path. The user has no rights until RBAC grants them.
std::string userKubeconfig(const Env& env, const std::string& name,
                           const std::vector<std::string>& groups = {});

// Builds a one-layer image from the directory ROOTFS with config `labels`,
// pushes it to the rig's registry as REPO:TAG and returns the pullable
// reference.
std::string pushImage(const Env& env, const std::string& rootfs, const std::string& repo,
                      const std::string& tag,
                      const std::map<std::string, std::string>& labels = {});

// Returns what a container of pod NS/POD wrote to stdout and stderr. The rig
// serves no kubelet API, so `kubectl logs` does not work; this reads the file
// the process kubelet keeps.
std::string podLog(const Env& env, const std::string& ns, const std::string& pod,
                   const std::string& container);

} // namespace captf::rig
