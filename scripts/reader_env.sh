#!/usr/bin/env bash
# A reader's environment, apart from the build's: Colab's runtime as Colab publishes it
# (tests/data/colab/pip-freeze.txt), without nqf_lite, jupyter-book or any test tool. Colab's pip,
# IPython 7.34, traitlets, ipykernel, ipywidgets 7.7 and scientific stack at Colab's versions; torch
# and Python are the nearest this machine has (each deviation is printed). The chapters' set-up cell
# installs nqf_lite into it. Used by scripts/run_tests.sh, step 3. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh >/dev/null
.venv/bin/python scripts/colab_env.py env _build/reader-venv
