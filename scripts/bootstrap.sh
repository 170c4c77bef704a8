#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent:
# a machine that has them all returns at once without touching apt.
set -euo pipefail
PKGS=(
  # toolchain
  g++ cmake ninja-build pkg-config git ca-certificates openssl curl
  clang-format-16
  # the compiler cache: warm CI compiles only what changed
  ccache
  # the linker of every preset that finds it (cmake/ProjectOptions.cmake)
  mold
  # libFuzzer targets build with clang
  clang-14 libclang-rt-14-dev
  # libraries named by the design brief, and where it is silent (docs/decisions/build-libraries.md)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libgit2-dev libspdlog-dev libfmt-dev libssl-dev
  libboost-dev libyaml-cpp-dev libcli11-dev libzstd-dev zlib1g-dev libarchive-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  # the tests validate contract/schemas/ with a third-party JSON Schema validator
  libvalijson-dev
  # the rig: sandboxed pods and a local OCI registry
  bubblewrap docker-registry
  # the fault matrix runs one manager with its clock off (docs/decisions/fault-matrix.md)
  libfaketime
  # pod networks: ip (netns, addresses) and nsenter (docs/decisions/rig-pod-network.md)
  iproute2 util-linux
  # the rig's Git server over SSH runs its own sshd (test/rig/README.md)
  openssh-server
  # the venvs of scripts/venv.sh: MkDocs (docs/decisions/docs-site.md) and
  # clang-tidy, the pinned PyPI release (docs/decisions/tidy.md)
  python3 python3-venv
)
# .clang-format uses InsertBraces (clang-format >= 15); bookworm's default is 14.
link_clang_format() {
  [ "$(readlink -f /usr/local/bin/clang-format 2>/dev/null)" = /usr/bin/clang-format-16 ] && return 0
  [ -x /usr/bin/clang-format-16 ] && ln -sf /usr/bin/clang-format-16 /usr/local/bin/clang-format
}
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  link_clang_format
  echo "bootstrap: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
new_sshd=false
if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
  # Installed here, so no one uses its system service: Debian's init script
  # and unit skip sshd while this file exists, so the package starts none.
  new_sshd=true
  $SUDO mkdir -p /etc/ssh && $SUDO touch /etc/ssh/sshd_not_to_be_run
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packaged registry and sshd start system services we do not use: the rig runs its own.
if command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now docker-registry >/dev/null 2>&1 || true
  if $new_sshd; then $SUDO systemctl disable --now ssh >/dev/null 2>&1 || true; fi
fi
link_clang_format
echo "bootstrap: done"
