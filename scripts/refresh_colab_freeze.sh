#!/usr/bin/env bash
# Replace tests/data/colab/ with Colab's newest published package lists (googlecolab/backend-info),
# and record the commit they came from in tests/data/colab/SOURCE.md. Needs access to GitHub.
# Usage: bash scripts/refresh_colab_freeze.sh [COMMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=https://github.com/googlecolab/backend-info
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --filter=blob:none "$REPO" "$tmp/backend-info"
if [ $# -ge 1 ]; then git -C "$tmp/backend-info" checkout --quiet "$1"; fi
commit=$(git -C "$tmp/backend-info" rev-parse HEAD)
subject=$(git -C "$tmp/backend-info" log -1 --format=%s)
for f in pip-freeze.txt pip-freeze.gpu.txt os-info.txt; do
  cp "$tmp/backend-info/$f" "tests/data/colab/$f"
done
python3 - "$commit" "$subject" <<'PY'
import re, sys
from pathlib import Path
path = Path("tests/data/colab/SOURCE.md")
text = re.sub(r"[0-9a-f]{40} \(\"[^\"]*\"\)", f'{sys.argv[1]} ("{sys.argv[2]}")', path.read_text())
path.write_text(text)
PY
echo "tests/data/colab/ now holds googlecolab/backend-info at $commit ($subject)"
echo "next: bash scripts/run_tests.sh (test_install.py and the reader editions run against it)"
