#!/usr/bin/env bash
# A reader's environment, apart from the build's: what Colab or Binder has before a chapter runs
# (torch, numpy, scipy, matplotlib, scikit-learn, IPython, a kernel, and ipywidgets 7.7 as Colab
# ships it), without nqf_lite, jupyter-book or any test tool. The chapters' set-up cell installs
# nqf_lite into it. Used by tests/reader/ (scripts/run_tests.sh, step 3). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=_build/reader-venv
PY=${PYTHON:-python3}
pin() { grep -i "^$1==" requirements.txt; }   # the build's version of a package
want="$(pin torch) $(pin numpy) $(pin scipy) $(pin matplotlib) $(pin scikit-learn) $(pin ipython) $(pin ipykernel) $(pin nbclient) $(pin nbformat) ipywidgets==7.7.5"
stamp=$VENV/.reader-installed
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[reader] $VENV is up to date"
  exit 0
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
echo "[reader] installing a reader's environment: $want"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install --quiet $want
echo "$want" > "$stamp"
