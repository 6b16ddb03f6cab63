#!/usr/bin/env bash
# Record traces from both reference implementations into one directory (default out/traces):
# the integration tests with recording on (under the pytest plugin, which checks their traces
# when the session ends), seeded simulations, and the multi-process `run` workloads on SQLite,
# MariaDB and Redis. Then check them all with scripts/check_traces.sh.
#
#   scripts/record_traces.sh [OUT_DIR]
#
# Every trace in OUT_DIR comes from the designed systems and must be accepted. Tests that switch
# a protecting gate off to show its bug (and an engine run with the seed's fix off) record into
# OUT_DIR-gates-off instead: some of those traces show the bug and are rejected on purpose
# (`scripts/check_traces.sh OUT_DIR-gates-off/engine-sqlite-fix-off` names each second run_start).
#
# Server URLs: LEASEPROOF_MYSQL_URL (default mysql://root@127.0.0.1:3306/test) and
# LEASEPROOF_REDIS_URL (default redis://127.0.0.1:6379/0). A workload whose server is absent is
# skipped with a message, except under CI=true, where it fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-$root/out/traces}" && cd "${1:-$root/out/traces}" && pwd)"
python="${PYTHON:-python3}"
mysql_url="${LEASEPROOF_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
redis_url="${LEASEPROOF_REDIS_URL:-redis://127.0.0.1:6379/0}"
lp() { "$python" -m conformance.cli "$@"; }

step() { printf '== %s\n' "$*" >&2; }
# A step that fails (a failing test, a run that exits non-zero) is reported, and the others
# still record; the script exits non-zero at the end, naming every step that failed.
failed=()
try() { local what="$1"; shift; if ! "$@"; then echo "record_traces.sh: FAILED: $what" >&2; failed+=("$what"); fi; }
absent() {
  if [ "${CI:-}" = "true" ]; then echo "record_traces.sh: $1 is not reachable and CI=true" >&2; exit 1; fi
  echo "record_traces.sh: $1 is not reachable; skipping its workload" >&2
}
reachable() { "$python" - "$1" <<'PY'
import sys
from urllib.parse import urlparse
import socket
u = urlparse(sys.argv[1])
try:
    socket.create_connection((u.hostname, u.port), timeout=3).close()
except OSError:
    sys.exit(1)
PY
}

gates_off="$out-gates-off"
rm -rf "$out"/engine-* "$out"/workqueue-* "$out"/command-* "$out"/tests "$out"/tests-gates-off "$gates_off"
mkdir -p "$out" "$gates_off"

step "integration tests, recording into $out/tests"
# The pytest plugin records the tests' traces into $out/tests and checks them when the session
# ends (conformance/pytest_plugin.py): a rejected, malformed or inconclusive one fails this step,
# as do a system file's coverage unmet (the tests' traces meet it by themselves) and a skip for
# any feature but the two the engine tests' recorder may claim (tests/engine/recording.py: a test
# that drove the store itself, two calls of one workflow in flight at once).
# Traces of a protecting gate off are written beside it, into $out/tests-gates-off, and moved.
try "the integration tests" env -C "$root" "$python" -m pytest -q -n 0 -p no:cacheprovider -p conformance.pytest_plugin \
    --leaseproof-traces "$out/tests" --leaseproof-root "$root" \
    --leaseproof-allow-skip direct_calls --leaseproof-allow-skip concurrent_calls tests/engine tests/workqueue >&2
for d in "$out"/tests-gates-off/*-gates-off; do
  [ -d "$d" ] && mv "$d" "$gates_off/"
done
rm -rf "$out/tests-gates-off"

# Each engine source below must meet the coverage guard by itself (check_traces.sh
# --coverage-per-source): an honoured lease in memory and through the scheduler, a rerun, and a
# stale finisher refused while another node holds the lease. The sims signal in memory on odd
# seeds (engine sim --signals alternate) and stall some finishing writes past the lease
# (--stale-fraction); the SQLite and MariaDB runs do both, signals in memory in a second run.
step "engine: seeded simulations"
try "engine sim" lp engine sim --seeds 20 --workflows 8 --trace-dir "$out/engine-sim"
# A crash is drawn per simulation step, idle polls included: at 0.01 a run crashed ~2,000 times
# per seed, its callers died with it, and few workflows got past their first run.
try "engine sim with faults" lp engine sim --seeds 20 --first-seed 100 --workflows 8 --crash-rate 0.0005 --pause-rate 0.02 --stale-fraction 1.0 --trace-dir "$out/engine-sim-faults"

# Model-guided: a behaviour of the small model (guided/engine.yaml) for every outcome of
# TraceEngine's Outcomes table, the engine driven along each on SQLite (conformance/guided), and
# (--edges) one for every edge of the smaller edge model's state graph, projected onto what a
# trace shows: their traces land under engine-guided/edges/. A difference from the model that
# guided/engine.yaml does not declare known fails the step.
step "engine: model-guided workloads on SQLite"
try "engine guided" lp guided --system engine --store sqlite --edges --out "$out/engine-guided"

step "engine: 2 node processes on SQLite"
try "engine run on SQLite" lp engine run --nodes 2 --workflows 200 --stale-fraction 0.5 --store "sqlite:///$out/engine.sqlite3" --trace-dir "$out/engine-sqlite/scheduler-signals"
try "engine run on SQLite, signals in memory" lp engine run --nodes 2 --workflows 100 --seed 1 --stale-fraction 0.5 \
    --gate-off FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER --store "sqlite:///$out/engine-inmem.sqlite3" --trace-dir "$out/engine-sqlite/in-memory-signals"

if reachable "$mysql_url"; then
  step "engine: 2 node processes on MariaDB"
  try "engine run on MariaDB" lp engine run --nodes 2 --workflows 200 --stale-fraction 0.5 --store "$mysql_url" --trace-dir "$out/engine-mysql/scheduler-signals"
  try "engine run on MariaDB, signals in memory" lp engine run --nodes 2 --workflows 100 --seed 1 --stale-fraction 0.5 \
      --gate-off FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER --store "$mysql_url" --trace-dir "$out/engine-mysql/in-memory-signals"
else
  absent "MySQL at $mysql_url"
fi

step "engine: the seed's fix off on SQLite, into $gates_off/engine-sqlite-fix-off"
# With the honour check (and the scheduler's forced signal) off, workflows run twice at once:
# the run exits 1, and check_traces.sh rejects those traces at the second run_start.
if lp engine run --nodes 2 --workflows 100 --store "sqlite:///$gates_off/engine-fix-off.sqlite3" \
    --gate-off HONOUR_CHECK --gate-off FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER \
    --trace-dir "$gates_off/engine-sqlite-fix-off"; then
  echo "record_traces.sh: the fix-off run double-ran nothing this time" >&2
fi

# Each system twice: seeds with a crash and a close (a node may leave early), and seeds where
# both nodes stay, so that stale nodes meet live peers (a pause past the lease, a takeover, then
# the stale node's renewal, release or write refused while the peer holds the entry or guard).
sims() {  # sims SYSTEM DIR [--redis URL]
  try "$1 sim ${3:-}" lp workqueue sim --system "$1" --seeds 20 --trace-dir "$2" "${@:3}"
  try "$1 sim, both nodes stay ${3:-}" lp workqueue sim --system "$1" --seeds 20 --first-seed 100 --crashes 0 --closes 0 \
    --trace-dir "$2" "${@:3}"
}
step "work queue and command layer: seeded simulations"
sims workqueue "$out/workqueue-sim"
sims command "$out/command-sim"

# Model-guided: a behaviour of the small model (guided/workqueue.yaml, guided/command.yaml)
# for every outcome of TraceWorkQueue's and TraceCommandQueue's Outcomes tables, the queue's
# nodes or the command layer driven along each (conformance/guided).
step "work queue and command layer: model-guided workloads on fakeredis"
try "workqueue guided" lp guided --system workqueue --edges --out "$out/workqueue-guided"
try "command guided" lp guided --system command --edges --out "$out/command-guided"

if reachable "$redis_url"; then
  step "work queue and command layer: the same seeded simulations on Redis (warped clock)"
  sims workqueue "$out/workqueue-sim-redis" --redis "$redis_url"
  sims command "$out/command-sim-redis" --redis "$redis_url"
  try "workqueue guided on Redis" lp guided --system workqueue --store "$redis_url" --out "$out/workqueue-guided-redis"
  try "command guided on Redis" lp guided --system command --store "$redis_url" --out "$out/command-guided-redis"
  step "command layer: 2 consumer processes on Redis"
  try "command run on Redis" lp workqueue run --consumers 2 --commands 50 --redis "$redis_url" --trace-dir "$out/command-redis"
else
  absent "Redis at $redis_url"
fi

n=$(find "$out" -name '*.ndjson' | wc -l)
m=$(find "$gates_off" -name '*.ndjson' | wc -l)
echo "recorded $n traces in $out, and $m with a gate off in $gates_off"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "record_traces.sh: ${#failed[@]} step(s) failed: ${failed[*]}" >&2
  exit 1
fi
