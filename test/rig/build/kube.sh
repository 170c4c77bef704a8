#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kubectl from
# k8s.io/kubernetes. Its go.mod requires every staging module at v0.0.0 and
# maps it to ./staging, so a wrapper module replaces each staging module with
# the published v0.M.P. The list is read from the tag's own go.mod, because it
# changes between minors.
. "$(dirname "$0")/common.sh"
OUT=$RIG_CACHE/bin/kube-$KUBE_VERSION
rig_done "$OUT" kube-apiserver kube-controller-manager kubectl && { echo "$OUT"; exit 0; }
LOG=$(rig_log kube-$KUBE_VERSION)
W=$RIG_CACHE/src/kube-$KUBE_VERSION
MINOR=$(cut -d. -f2 <<<"$KUBE_VERSION"); STAGING="v0.${KUBE_VERSION#v1.}"
build_kube() {
  mkdir -p "$W" && cd "$W"
  [ -f go.mod ] || { go mod init rig.local/kube; go mod edit -go=1.26; }
  GOMOD=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$GOMOD"); do
    go mod edit -replace="$m=$m@$STAGING"
  done
  PKGS="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl"
  for p in $PKGS; do go get -tool "$p@$KUBE_VERSION"; done
  LD="-s -w"
  for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LD+=" -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$MINOR -X $v.gitTreeState=clean"
    LD+=" -X $v.buildDate=1970-01-01T00:00:00Z"
  done
  go build -trimpath -ldflags "$LD" -o "$OUT.tmp/" $PKGS
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
}
rig_build "kubernetes $KUBE_VERSION" "$LOG" build_kube
echo "$OUT"
