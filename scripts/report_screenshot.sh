#!/usr/bin/env bash
# The screenshot of a counterexample in docs/ (docs/report-counterexample.png): the HTML report of
# one engine calibration, drawn by headless Chromium (Debian's `chromium` package).
#   scripts/report_screenshot.sh [MODEL] [OUT.png]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model="${1:-inmem_overlap_unguarded}"
png="${2:-docs/report-counterexample.png}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
leaseproof check "$model" --html "$dir" > /dev/null || true   # a mismatch still has its picture
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$dir/profile" --no-first-run \
  --disable-background-networking --proxy-server=127.0.0.1:9 --window-size=1760,1250 \
  --screenshot="$(pwd)/$png" "file://$dir/index.html#model-$model" 2> /dev/null
echo "$png"
