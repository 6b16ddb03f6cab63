#!/usr/bin/env bash
# Validate recorded traces against the TLA+ specs: a verdict per trace and a summary line.
#   scripts/check_traces.sh [--self-test] [DIR|FILE...]   (default: out/traces, as record_traces.sh writes)
# --self-test first checks the known-good/known-bad corpus in traces/corpus/, then mutates every
# accepted trace and requires every mutant to be rejected. Other options go to `leaseproof traces check`.
# A skipped trace fails the check unless --allow-skip names each feature that made it skip. On
# record_traces.sh's directory (the default) the two the engine tests' recorder may claim are
# allowed: direct_calls (a test drove the store, scheduler or queue itself) and concurrent_calls
# (a node had two calls of one workflow in flight; tests/engine/recording.py). Each source there
# (out/traces/engine-sim, engine-sqlite, ..., tests) must meet the coverage guard by itself
# (--coverage-per-source: one line per source and system), the multi-process Redis run
# (command-redis) too; and the whole set must show every outcome its trace spec allows, less
# what the system file declares unreachable with a reason (--require-spec-coverage: the
# model-guided sources, engine-guided and workqueue-guided, reach each one).
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
if [ "$have_path" = no ]; then
  set -- --allow-skip direct_calls --allow-skip concurrent_calls --coverage-per-source --require-spec-coverage \
    "$@" "$root/out/traces"
fi
exec "$python" -m conformance.cli traces check --root "$root" "$@"
