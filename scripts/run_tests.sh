#!/usr/bin/env bash
# Run every test: unit tests; nbval over every chapter at one base seed; every chapter's reader
# edition run twice in one kernel, in a reader's environment, at another seed; the book build (which
# executes every chapter at the base seed, fails on a failed claim, and prints the PDFs); the browser
# and PDF checks. Each step prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export PYTHONHASHSEED=0
export NQF_EXERCISES_STRICT=1   # every coding exercise's solution must pass its check
PYTEST=".venv/bin/python -m pytest"
NBVAL=(--nbval-lax --nbval-current-env -q -n 2 --dist loadfile -p no:cacheprovider)
#: base seed of the nbval run of the chapters (step 2)
NBVAL_SEED=1
#: base seed of the reader editions (step 3); the base seed itself (NQF_SEED, default 0) runs in the
#: book build (step 4). Three seeds in all: every claim must hold for any seed.
READER_SEED=2
STEPS=5
mapfile -t notebooks < <(.venv/bin/python scripts/toc_notebooks.py)
mapfile -t readers < <(for nb in "${notebooks[@]}"; do echo "editions/reader/$(basename "$nb")"; done)
start_all=$SECONDS

step() {  # step <number> <message> <command...>: run the command and print its wall time
  local n=$1 msg=$2 t0=$SECONDS
  shift 2
  echo "== $n/$STEPS $msg"
  "$@"
  echo "== $n/$STEPS done in $((SECONDS - t0)) s"
}

reader_editions() {
  bash scripts/reader_env.sh
  # pip installs nqf_lite from this repository's committed HEAD, as Colab installs it from GitHub
  NQF_SEED=$READER_SEED _build/reader-venv/bin/python scripts/reader_check.py --repo "file://$PWD" --jobs 2 \
    "${readers[@]}"
}

step 1 "unit tests (package, editions up to date, install into a Colab-like environment, exercises)" \
  $PYTEST tests -m "not browser" -q -n 2 --dist loadfile -p no:cacheprovider
step 2 "nbval: all ${#notebooks[@]} chapters in _toc.yml at base seed NQF_SEED=$NBVAL_SEED" \
  env NQF_SEED=$NBVAL_SEED $PYTEST "${NBVAL[@]}" "${notebooks[@]}"
step 3 "reader editions in an environment built from Colab's published package list (IPython 7.34, ipywidgets 7.7.1; no build tools), each run twice in one kernel, NQF_SEED=$READER_SEED" \
  reader_editions
step 4 "book build at base seed NQF_SEED=${NQF_SEED:-0}, with the PDFs (-W: warnings are errors; a failed claim fails the build)" \
  bash scripts/build_book.sh
step 5 "browser check of the built HTML at 1280 px and 390 px, and of the PDFs (headless Chromium)" \
  $PYTEST tests/browser -m browser -q -n 2 --dist loadgroup -p no:cacheprovider
echo "== all $STEPS steps passed in $((SECONDS - start_all)) s"
