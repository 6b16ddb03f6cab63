#!/usr/bin/env bash
# Model-check every model under models/ and compare each verdict with the one its file expects.
# Exits non-zero on any mismatch, error or timeout. Arguments go to `leaseproof check`
# A claimed property that no calibration violates is a mismatch (--strict).
# (e.g. `scripts/check.sh engine`, `scripts/check.sh --quick`, `scripts/check.sh --junit out.xml`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
if ! "$python" -c "import conformance.cli" 2>/dev/null; then
  echo "check.sh: leaseproof is not installed for $python; run: pip install -e $root" >&2
  exit 2
fi
exec "$python" -m conformance.cli check --root "$root" --strict "$@"
