#!/usr/bin/env bash
# Builds OpenTofu. Its go.mod replaces hashicorp/hcl with OpenTofu's fork; the
# wrapper must copy that replace or hcl silently resolves to upstream.
. "$(dirname "$0")/common.sh"
OUT=$RIG_CACHE/bin/tofu-$TOFU_VERSION
rig_done "$OUT" tofu && { echo "$OUT"; exit 0; }
LOG=$(rig_log tofu-$TOFU_VERSION)
W=$RIG_CACHE/src/tofu-$TOFU_VERSION
build_tofu() {
  mkdir -p "$W" && cd "$W"
  if [ ! -f go.mod ]; then
    go mod init rig.local/tofu
    GOMOD=$(go mod download -json "github.com/opentofu/opentofu@$TOFU_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    go mod edit -go="$(sed -n 's/^go \(.*\)/\1/p' "$GOMOD")" -godebug=tlsmlkem=0
    # Copy every replace of the upstream go.mod (today: the hcl fork).
    sed -n 's#^replace \([^ ]*\) \([^ ]*\) => \([^ ]*\) \([^ ]*\)$#\1@\2=\3@\4#p' "$GOMOD" |
      while read -r r; do go mod edit -replace="$r"; done
  fi
  go get -tool "github.com/opentofu/opentofu/cmd/tofu@$TOFU_VERSION"
  go build -trimpath -ldflags "-s -w -X 'github.com/opentofu/opentofu/version.dev=no'" \
    -o "$OUT.tmp/tofu" github.com/opentofu/opentofu/cmd/tofu
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
}
rig_build "opentofu $TOFU_VERSION" "$LOG" build_tofu
echo "$OUT"
