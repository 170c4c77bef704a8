#!/usr/bin/env bash
# Regenerates docs/reference/{flags,metrics,conditions,events}.md from the
# code (test/docs/reference_pages.cc) with the dev build's captf_refdocs;
# ReferencePagesTest fails until the regenerated pages are committed.
#   scripts/docs-reference.sh [BUILD_DIR]   default build/dev
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/dev}"
cmake --build "$build" --target captf_refdocs
"$build/test/docs/captf_refdocs" "$PWD"
