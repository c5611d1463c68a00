#!/usr/bin/env bash
# Run every test: unit tests, nbval over every chapter in _toc.yml (default seed, then a seed
# sweep), the book build, the browser check. Each step prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
export PYTHONHASHSEED=0
PYTEST=".venv/bin/python -m pytest"
NBVAL=(--nbval-lax --nbval-current-env -q -n 2 --dist loadfile -p no:cacheprovider)
#: base seeds of the sweep (step 3); the default-seed run is step 2
SWEEP_SEEDS=(1 2)
STEPS=5
mapfile -t notebooks < <(.venv/bin/python scripts/toc_notebooks.py)
start_all=$SECONDS

step() {  # step <number> <message> <command...>: run the command and print its wall time
  local n=$1 msg=$2 t0=$SECONDS
  shift 2
  echo "== $n/$STEPS $msg"
  "$@"
  echo "== $n/$STEPS done in $((SECONDS - t0)) s"
}

sweep() {
  local seed
  for seed in "${SWEEP_SEEDS[@]}"; do
    local t0=$SECONDS
    echo "-- NQF_SEED=$seed"
    NQF_SEED=$seed $PYTEST "${NBVAL[@]}" "${notebooks[@]}"
    echo "-- NQF_SEED=$seed done in $((SECONDS - t0)) s"
  done
}

step 1 "unit tests" \
  $PYTEST tests -m "not browser" -q -n 2 --dist loadfile -p no:cacheprovider
step 2 "nbval at base seed NQF_SEED=${NQF_SEED:-0}: all ${#notebooks[@]} chapters in _toc.yml execute, every claim holds" \
  $PYTEST "${NBVAL[@]}" "${notebooks[@]}"
step 3 "seed sweep: every chapter again under base seeds ${SWEEP_SEEDS[*]}; every claim must hold for any seed" \
  sweep
step 4 "book build (-W: warnings are errors; a failed claim fails the build)" \
  bash scripts/build_book.sh
step 5 "browser check of the built HTML (headless Chromium)" \
  $PYTEST tests/browser -m browser -q -p no:cacheprovider
echo "== all $STEPS steps passed in $((SECONDS - start_all)) s"
