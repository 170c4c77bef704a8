#!/usr/bin/env bash
# The docs site (docs/decisions/docs-site.md): makes the MkDocs venv from
# scripts/docs-requirements.txt under ~/.cache/captf-docs (again when the
# requirements change), then builds the site with --strict, so a broken
# link, a page missing from the nav or a bad anchor fails.
#   scripts/docs.sh [SITE_DIR]   build into SITE_DIR (default build/site)
#   scripts/docs.sh --venv       only make the venv (scripts/test.sh)
#   scripts/docs.sh --serve      live preview on 127.0.0.1:8000
# CAPTF_DOCS_VENV overrides the venv's directory.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CAPTF_DOCS_VENV:-$HOME/.cache/captf-docs}"
bash scripts/venv.sh "$venv" scripts/docs-requirements.txt
case "${1:-}" in
  --venv) exit 0 ;;
  --serve) exec "$venv/bin/mkdocs" serve --strict -f mkdocs.yml ;;
esac
site="${1:-build/site}"
"$venv/bin/mkdocs" build --strict --clean -f mkdocs.yml -d "$(realpath -m "$site")"
echo "docs: site in $site"
