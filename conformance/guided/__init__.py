"""Model-guided workloads: drive the implementation along the model's paths.

For each outcome a trace spec's `Outcomes` table lists (less those the system file declares
unreachable), TLC finds a shortest behaviour of a small model that takes that step with that
outcome (`targets.py`: the reach model; `tla/ReachEngine.tla`: its properties). The replay
adapter runs the behaviour on the real code as a schedule (the same one `leaseproof replay` uses
for counterexamples), each store's trace is written, and every trace is validated against the
trace spec (`run.py`). A step the model takes and the code cannot is a finding (`blocked`); an
action without an implementation step is `unmapped`, never skipped silently.
"""

from conformance.guided.own import Blocked, Unmapped

__all__ = ["Blocked", "Unmapped"]
