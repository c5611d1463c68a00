#!/usr/bin/env bash
# Run every test: unit tests, nbval over every notebook in _toc.yml, the book build, the browser check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export PYTHONHASHSEED=0
PYTEST=".venv/bin/python -m pytest"

echo "== 1/4 unit tests"
$PYTEST tests -m "not browser" -q -n 2 --dist loadfile -p no:cacheprovider

echo "== 2/4 nbval: every chapter in _toc.yml executes and its asserts hold"
mapfile -t notebooks < <(.venv/bin/python scripts/toc_notebooks.py)
$PYTEST --nbval-lax --nbval-current-env -q -n 2 --dist loadfile -p no:cacheprovider "${notebooks[@]}"

echo "== 3/4 book build (-W: warnings are errors; a failed claim fails the build)"
bash scripts/build_book.sh

echo "== 4/4 browser check of the built HTML (headless Chromium)"
$PYTEST tests/browser -m browser -q -p no:cacheprovider
