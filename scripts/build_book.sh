#!/usr/bin/env bash
# Build the book into _build/html, executing every chapter; warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export NQF_CLAIMS_DIR="$PWD/_build/claims"   # chapters record their checked claims here (the ledger page)
rm -rf "$NQF_CLAIMS_DIR" _build/.doctrees _build/html
export PYTHONHASHSEED=0
# the chapters' kernels read a build-only IPython profile (scripts/ipython_kernel_config.py)
export IPYTHONDIR="$PWD/_build/ipython"
mkdir -p "$IPYTHONDIR/profile_default"
cp scripts/ipython_kernel_config.py "$IPYTHONDIR/profile_default/ipython_kernel_config.py"
t0=$SECONDS
.venv/bin/jupyter-book build . -W -n --keep-going
echo "[book] built in $((SECONDS - t0)) s (seed NQF_SEED=${NQF_SEED:-0}): open _build/html/index.html in a browser"
