#!/usr/bin/env bash
# Build every edition of the book from its one source, the chapter notebooks:
#   1. the reader and student notebooks (editions/, committed: Colab opens them from the repository);
#   2. the HTML book in _build/html, executing every chapter (warnings are errors; a failed claim or
#      a solution that fails its exercise check stops the build);
#   3. the PDFs of every chapter and of the whole book (_build/html/pdf/, printed by Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export NQF_CLAIMS_DIR="$PWD/_build/claims"   # chapters record their checked claims here (the ledger page)
export NQF_EXERCISES_STRICT=1                # every coding exercise's solution must pass its check
rm -rf "$NQF_CLAIMS_DIR" _build/.doctrees _build/html
export PYTHONHASHSEED=0
# the chapters' kernels read a build-only IPython profile (scripts/ipython_kernel_config.py)
export IPYTHONDIR="$PWD/_build/ipython"
mkdir -p "$IPYTHONDIR/profile_default"
cp scripts/ipython_kernel_config.py "$IPYTHONDIR/profile_default/ipython_kernel_config.py"
t0=$SECONDS
.venv/bin/python scripts/editions.py
.venv/bin/jupyter-book build . -W -n --keep-going ${NQF_BUILD_ARGS:-}
echo "[book] built in $((SECONDS - t0)) s (seed NQF_SEED=${NQF_SEED:-0}): open _build/html/index.html in a browser"
t1=$SECONDS
.venv/bin/python scripts/build_pdf.py
echo "[book] PDFs in $((SECONDS - t1)) s: _build/html/pdf/"
