#!/usr/bin/env bash
# Record the counterexamples that tests/engine/test_replay.py replays: one `leaseproof check
# --json` outcome per engine calibration model, compacted, in tests/fixtures/replay/NAME.json.
# Run it again after a change to tla/Engine.tla or a model file (the test that runs TLC live
# says when the saved ones are stale).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODELS=(
  inmem_overlap_unguarded inmem_overlap_unguarded_seed_renewal inmem_overlap_seed_renewal
  signal_in_memory_unguarded signal_in_memory_same_node_unguarded signal_in_memory_seed_renewal
  start_race_unguarded start_race_unguarded_seed_renewal start_race_after_lease_unguarded
  start_race_seed_renewal start_race_recover_in_memory_seed_renewal start_race_three_nodes_seed_renewal
  pr12_regression terminal_overwritten start_retry_unrecovered start_retry_stranded_forever
  inmem_start_late_copy inmem_start_awaits_unguarded
  lease_faults lease_faults_aba inmem_start inmem_start_seed_renewal inmem_start_overlap signal_failure
  timer_arming_crash timer_arming_store_error clock_past_window
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
python3 -m conformance.cli check "${MODELS[@]}" -j 1 -w 1 --json > "$out" || true
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for m in data["models"]:
    if m["verdict"]["kind"] != "violated":
        sys.exit(f"{m['name']}: TLC gave {m['actual']}, not a counterexample")
    keep = {"models": [{k: m[k] for k in ("name", "file", "expected", "actual", "verdict")}]}
    with open(f"tests/fixtures/replay/{m['name']}.json", "w") as f:
        json.dump(keep, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"recorded tests/fixtures/replay/{m['name']}.json ({len(m['verdict']['counterexample']['states'])} states)")
PY
