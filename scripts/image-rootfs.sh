#!/usr/bin/env bash
# The manager image's filesystem (docs/decisions/release.md), in one place
# for scripts/release.sh (which pushes it with the rig's image writer) and
# the Containerfile (which copies it into a scratch image):
#   /manager, the static /runner, /etc/ssl/certs/ca-certificates.crt,
#   /etc/passwd and /etc/group (user 65532), an empty /tmp, and the
#   manager's shared libraries (its ldd closure) at their paths. No shell.
#   scripts/image-rootfs.sh --manager BIN --runner BIN --out DIR
set -euo pipefail
manager="" runner="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --manager) manager=$2; shift 2 ;;
    --runner) runner=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "image-rootfs: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$manager" ] && [ -x "$runner" ] && [ -n "$out" ] ||
  { echo "image-rootfs: --manager BIN, --runner BIN and --out DIR are required" >&2; exit 2; }
if ldd "$runner" >/dev/null 2>&1; then echo "image-rootfs: $runner is not static" >&2; exit 1; fi
mkdir -p "$out/etc/ssl/certs" "$out/tmp"
install -m 0755 "$manager" "$out/manager"
install -m 0755 "$runner" "$out/runner"
cp /etc/ssl/certs/ca-certificates.crt "$out/etc/ssl/certs/"
ldd "$manager" | awk '/=> \//{print $3} /^\t\//{print $1}' | while read -r lib; do
  mkdir -p "$out$(dirname "$lib")"
  cp -L "$lib" "$out$lib"
done
printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$out/etc/passwd"
printf 'nonroot:x:65532:\n' >"$out/etc/group"
