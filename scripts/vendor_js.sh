#!/usr/bin/env bash
# Rebuild vendor/: the third-party JavaScript the HTML book needs, served from
# the book itself so that pages render offline (no CDN at read time). vendor/
# holds third-party files only; the book's own CSS/JS lives in static/.
#   - MathJax 3 (CommonHTML output, TeX + MathML input) for the equations;
#   - the ipywidgets HTML manager (standalone embed.js) for the kernel-free
#     slider explorers (nqf_lite.book.widgets), matching ipywidgets 8.
# Usage: bash scripts/vendor_js.sh   (needs npm; writes vendor/ in the repo root)
set -euo pipefail

MATHJAX_VERSION=3.2.2
HTML_MANAGER_VERSION=1.0.15

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/vendor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "mathjax@$MATHJAX_VERSION" "@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION" >/dev/null
mkdir mathjax html-manager
tar xzf "mathjax-$MATHJAX_VERSION.tgz" -C mathjax --strip-components=1
tar xzf "jupyter-widgets-html-manager-$HTML_MANAGER_VERSION.tgz" -C html-manager --strip-components=1

rm -rf "$out/mathjax" "$out/jupyter-widgets"
mkdir -p "$out/mathjax/es5/output/chtml/fonts" "$out/mathjax/es5/input/tex" "$out/jupyter-widgets"

# MathJax: the combined component, the CHTML web fonts, and the TeX extensions
# that the autoload package fetches on demand (\boldsymbol, \cancel, ...).
cp mathjax/LICENSE "$out/mathjax/"
cp mathjax/es5/tex-mml-chtml.js "$out/mathjax/es5/"
cp -r mathjax/es5/output/chtml/fonts/woff-v2 "$out/mathjax/es5/output/chtml/fonts/"
cp -r mathjax/es5/input/tex/extensions "$out/mathjax/es5/input/tex/"
rm "$out/mathjax/es5/input/tex/extensions/all-packages.js"

# Widgets: the standalone bundle (built-in controls only, no require.js) and
# the woff2 icon fonts its CSS points to (resolved next to the script).
cp html-manager/dist/embed.js html-manager/dist/embed.js.LICENSE.txt "$out/jupyter-widgets/"
cp html-manager/dist/*.woff2 "$out/jupyter-widgets/"
printf 'BSD-3-Clause, Copyright (c) Project Jupyter Contributors\n' > "$out/jupyter-widgets/LICENSE"

cat > "$out/VERSIONS" <<VERSIONS
mathjax $MATHJAX_VERSION
@jupyter-widgets/html-manager $HTML_MANAGER_VERSION
VERSIONS
du -sh "$out"
