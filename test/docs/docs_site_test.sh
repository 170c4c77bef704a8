#!/usr/bin/env bash
# captf_docs_site: the docs site builds with `mkdocs build --strict`, and a
# broken link makes that build fail (so --strict really guards the site).
# Needs the venv scripts/docs.sh makes (scripts/test.sh makes it before
# ctest); without it the test fails with the command to run. No network.
#   docs_site_test.sh SOURCE_DIR
set -euo pipefail
src="$(realpath "${1:?usage: docs_site_test.sh SOURCE_DIR}")"
venv="${CAPTF_DOCS_VENV:-$HOME/.cache/captf-docs}"
mkdocs="$venv/bin/mkdocs"
if [ ! -x "$mkdocs" ]; then
  echo "FAIL: no MkDocs venv at $venv; make it with: bash $src/scripts/docs.sh --venv" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. The site as checked in. Never -q: MkDocs counts only the warnings it
# logs, so a quiet strict build passes with broken links.
if ! "$mkdocs" build --strict --clean -f "$src/mkdocs.yml" -d "$work/site" 2> "$work/log"; then
  cat "$work/log" >&2
  echo "FAIL: mkdocs build --strict of $src/mkdocs.yml failed (see above)" >&2
  exit 1
fi
for page in index.html getting-started/index.html reference/flags/index.html \
            reference/metrics/index.html reference/conditions/index.html \
            reference/events/index.html decisions/docs-site/index.html; do
  if [ ! -s "$work/site/$page" ]; then
    echo "FAIL: the site has no $page" >&2
    exit 1
  fi
done
echo "ok: the site builds strict ($(find "$work/site" -name '*.html' | wc -l) pages)"

# 2. The same site with one broken link must not build.
mkdir "$work/copy"
cp -r "$src/docs" "$src/mkdocs.yml" "$work/copy/"
printf '\nSee [a page that does not exist](no-such-page.md).\n' >> "$work/copy/docs/concepts.md"
if "$mkdocs" build --strict -f "$work/copy/mkdocs.yml" -d "$work/broken" 2> "$work/log"; then
  echo "FAIL: a broken link in docs/concepts.md did not fail mkdocs build --strict" >&2
  exit 1
fi
if ! grep -q "no-such-page.md" "$work/log"; then
  cat "$work/log" >&2
  echo "FAIL: the strict build failed, but not for the broken link" >&2
  exit 1
fi
echo "ok: a broken link fails the strict build"
