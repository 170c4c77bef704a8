#!/usr/bin/env bash
# A Python venv holding exactly a pinned requirements file, made again when
# that file changes (its SHA-256 is kept in the venv). The one way the
# scripts get tools from PyPI: scripts/docs.sh (MkDocs) and scripts/tidy.sh
# (clang-tidy).
#   scripts/venv.sh VENV_DIR REQUIREMENTS_FILE
set -euo pipefail
venv="$1"
requirements="$2"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
# A venv whose interpreter no longer runs (Python upgraded, a half-removed
# directory) is made again too.
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python3" -c '' 2>/dev/null; then
  echo "venv: making $venv from $requirements"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    -r "$requirements"
  echo "$want" > "$stamp"
fi
