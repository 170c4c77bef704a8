#!/usr/bin/env bash
# The manager image's filesystem (docs/decisions/release.md), in one place
# for scripts/release.sh (which pushes it with the rig's image writer) and
# the Containerfile (which copies it into a scratch image). Exactly:
#   /manager and /runner, both fully static (the release-static preset),
#   /etc/ssl/certs/ca-certificates.crt, /etc/passwd and /etc/group (user
#   65532), and an empty /tmp (mode 1777). No shell, no libraries.
#
#   scripts/image-rootfs.sh --manager BIN --runner BIN --out DIR [--dynamic-ok]
#
# A binary with a program interpreter (PT_INTERP) or a needed shared
# library (DT_NEEDED) is refused. --dynamic-ok accepts a dynamic manager
# and copies its shared libraries (its ldd closure) to their paths: for the
# tests that feed the dev build's manager (test/release). The runner must be
# static either way: it is copied into module images that have no libraries
# of ours.
set -euo pipefail
manager="" runner="" out="" dynamic_ok=false
while [ $# -gt 0 ]; do
  case "$1" in
    --manager) manager=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --dynamic-ok) dynamic_ok=true; shift ;;
    *) echo "image-rootfs: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$manager" ] && [ -x "$runner" ] && [ -n "$out" ] ||
  { echo "image-rootfs: --manager BIN, --runner BIN and --out DIR are required" >&2; exit 2; }

# What makes FILE dynamic ("" when it is static): its program interpreter
# and its needed libraries, from the ELF headers (readelf, binutils), so a
# static-pie binary (a dynamic section, no interpreter, nothing needed)
# counts as static.
dynamic_parts() {
  local headers
  headers=$(LC_ALL=C readelf --wide --program-headers --dynamic "$1" 2>&1) ||
    { echo "not an ELF executable: ${headers%%$'\n'*}"; return; }
  {
    grep -o 'Requesting program interpreter: [^]]*' <<<"$headers" | sed 's/^Requesting //' || true
    grep -o '(NEEDED).*Shared library: \[[^]]*\]' <<<"$headers" |
      sed 's/.*Shared library: \[\(.*\)\]/needs \1/' || true
  } | paste -sd, - | sed 's/,/, /g'
}

why=$(dynamic_parts "$runner")
if [ -n "$why" ]; then
  echo "image-rootfs: the runner $runner is not static ($why): build it with the release-static preset" >&2
  exit 1
fi
manager_dynamic=$(dynamic_parts "$manager")
if [[ "$manager_dynamic" == "not an ELF"* ]]; then
  echo "image-rootfs: the manager $manager is $manager_dynamic" >&2
  exit 1
fi
if [ -n "$manager_dynamic" ] && ! $dynamic_ok; then
  echo "image-rootfs: the manager $manager is not static ($manager_dynamic): build it with the" \
    "release-static preset, or pass --dynamic-ok to ship its shared libraries" >&2
  exit 1
fi

mkdir -p "$out/etc/ssl/certs" "$out/tmp"
chmod 1777 "$out/tmp"
install -m 0755 "$manager" "$out/manager"
install -m 0755 "$runner" "$out/runner"
install -m 0644 /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/"
printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$out/etc/passwd"
printf 'nonroot:x:65532:\n' >"$out/etc/group"
chmod 0644 "$out/etc/passwd" "$out/etc/group"
if [ -n "$manager_dynamic" ]; then
  ldd "$manager" | awk '/=> \//{print $3} /^\t\//{print $1}' | while read -r lib; do
    mkdir -p "$out$(dirname "$lib")"
    cp -L "$lib" "$out$lib"
  done
fi
