#!/usr/bin/env bash
# clang-tidy on the first-party translation units (contract/ manager/ runner/
# webhooks/ lint/ test/ bench/; never the generated protobuf code under
# build/), with the repository's .clang-tidy and warnings as errors, nproc
# jobs. clang-tidy itself is the pinned PyPI release of
# scripts/tidy-requirements.txt, in a venv under ~/.cache/captf-tidy-venv
# (CAPTF_TIDY_VENV; CAPTF_CLANG_TIDY names another binary). Incremental: a TU
# that passed is not checked again until clang-tidy, .clang-tidy, its compile
# command, the TU or a header it includes changes (cache: ~/.cache/captf-tidy,
# or CAPTF_TIDY_CACHE). Needs a built tree: the generated headers,
# compile_commands.json and ninja's header lists.
#   scripts/tidy.sh [BUILD_DIR]                 every TU (default build/dev)
#   scripts/tidy.sh [BUILD_DIR] --only FILE...  these sources, or every TU that
#                                               includes one of these headers
#   scripts/tidy.sh -j N | --no-cache | --tidy-arg=ARG | --times FILE
#   scripts/tidy.sh --analyzer                  also the static analyzer
#                                               (clang-analyzer-*), on the
#                                               product TUs only; CI leaves
#                                               it out (docs/decisions/tidy.md)
# Exits non-zero when any TU has a finding, after printing them all.
# docs/decisions/tidy.md says why it works this way.
set -euo pipefail
here="$(dirname "$0")"
if [ -z "${CAPTF_CLANG_TIDY:-}" ]; then
  venv="${CAPTF_TIDY_VENV:-$HOME/.cache/captf-tidy-venv}"
  bash "$here/venv.sh" "$venv" "$here/tidy-requirements.txt"
  export CAPTF_CLANG_TIDY="$venv/bin/clang-tidy"
fi
exec /usr/bin/python3 "$here/tidy.py" "$@"
