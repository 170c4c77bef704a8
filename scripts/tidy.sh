#!/usr/bin/env bash
# clang-tidy on the first-party translation units (contract/ manager/ runner/
# webhooks/ lint/ test/ bench/; never the generated protobuf code under
# build/), with the repository's .clang-tidy and warnings as errors, nproc
# jobs. Incremental: a TU that passed is not checked again until clang-tidy,
# .clang-tidy, its compile command, the TU or a header it includes changes
# (cache: ~/.cache/captf-tidy, or CAPTF_TIDY_CACHE). Needs a built tree: the
# generated headers, compile_commands.json and ninja's header lists.
#   scripts/tidy.sh [BUILD_DIR]                 every TU (default build/dev)
#   scripts/tidy.sh [BUILD_DIR] --only FILE...  these sources, or every TU that
#                                               includes one of these headers
#   scripts/tidy.sh -j N | --no-cache | --tidy-arg=ARG
# Exits non-zero when any TU has a finding, after printing them all.
# docs/decisions/tidy.md says why it works this way.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/tidy.py" "$@"
