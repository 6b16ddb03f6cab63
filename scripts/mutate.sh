#!/usr/bin/env bash
# The whole kill matrix: every mutant of mutants/*.yaml through every check of its catalogue
# (`leaseproof mutate`), two mutants at a time. Long (each check is a test run): a nightly job,
# not part of .ci/run. Options go to `leaseproof mutate` (--system, --checks, --mutant, --json).
#   scripts/mutate.sh [--json] [...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
if ! "$python" -c "import conformance.cli" 2>/dev/null; then
  echo "mutate.sh: leaseproof is not installed for $python; run: pip install -e $root" >&2
  exit 2
fi
exec "$python" -m conformance.cli mutate --root "$root" --jobs "${JOBS:-2}" "$@"
