#!/usr/bin/env bash
# Validate recorded traces against the TLA+ specs: a verdict per trace and a summary line.
#   scripts/check_traces.sh [--self-test] [DIR|FILE...]   (default: out/traces, as record_traces.sh writes)
# --self-test first checks the known-good/known-bad corpus in traces/corpus/, then mutates every
# accepted trace and requires every mutant to be rejected. Other options go to `leaseproof traces check`.
# On record_traces.sh's directory (the default) a skipped trace fails the check, except the tests'
# own traces (some drive the store directly: a feature the engine's system file declares out of scope),
# and each source (out/traces/engine-sim, engine-sqlite, ..., tests) must meet the coverage guard by
# itself (--coverage-per-source: one line per source and system), the multi-process Redis run
# (command-redis) too.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
if ! "$python" -c "import conformance.cli" 2>/dev/null; then
  echo "check_traces.sh: leaseproof is not installed for $python; run: pip install -e $root" >&2
  exit 2
fi
# With no trace file or directory among the arguments, check what record_traces.sh wrote.
have_path=no
for a in "$@"; do [ -e "$a" ] && have_path=yes; done
if [ "$have_path" = no ]; then set -- --fail-on-skip --skip-ok "$root/out/traces/tests/*" --coverage-per-source "$@" "$root/out/traces"; fi
exec "$python" -m conformance.cli traces check --root "$root" "$@"
