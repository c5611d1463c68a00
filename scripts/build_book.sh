#!/usr/bin/env bash
# Build the book into _build/html, executing every chapter; warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export NQF_CLAIMS_DIR="$PWD/_build/claims"   # chapters record their checked claims here (the ledger page)
rm -rf "$NQF_CLAIMS_DIR" _build/.doctrees _build/html
export PYTHONHASHSEED=0
.venv/bin/jupyter-book build . -W -n --keep-going
echo "[book] built: open _build/html/index.html in a browser"
