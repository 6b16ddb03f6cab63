"""Settings and gates of the work queue and the command layer.

Settings are the timeouts and bounds (milliseconds, counts). Gates are the guards of the design,
each switchable off so that a test or a calibration run can show what it protects: with every
gate on you get the fixed design of the reference; a gate off is a known regression.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from impl.workqueue.errors import BadSettings


@dataclass(frozen=True)
class Gates:
    """The guards, all on by default. Turn one off with `Gates().off("renew_owner_check")`."""

    renew_owner_check: bool = True          # renew/release touch only an entry this consumer owns
    atomic_renew: bool = True               # owner check and claim in one script (else read, then claim)
    heartbeat: bool = True                  # renew active invocations every VT/3 at all
    renew_past_max_processing: bool = True  # keep renewing a handler past max_processing_ms
    invocation_scoped_permits: bool = True  # a permit only while a handler runs (vs message life)
    permit_bound: bool = True               # at most `concurrency` handlers run at once
    local_dedup: bool = True                # drop a self-reclaim of an entry this node runs
    release_permit_on_rejection: bool = True  # executor rejection gives the permit back
    close_waits_for_handlers: bool = True   # close keeps renewing until handlers return
    cleanup_on_ack_failure: bool = True     # an ack that throws still ends the invocation
    reclaim_retries: bool = True            # polls try XAUTOCLAIM for expired entries
    attempt_guard: bool = True              # a delivery takes the command's attempt guard
    atomic_put_if_owner: bool = True        # owner check and state write in one script
    submit_always_offers: bool = True       # resubmitting an existing id offers again (repair)
    cancel_takes_guard: bool = True         # cancel is refused while a handler holds the guard
    terminal_check: bool = True             # a delivery of a terminal command only acks

    def off(self, *names: str) -> "Gates":
        """A copy with the named gates switched off."""
        known = {f.name for f in fields(self)}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise BadSettings(f"unknown gate(s) {unknown}; known gates: {sorted(known)}")
        return replace(self, **{n: False for n in names})

    def as_dict(self) -> dict[str, bool]:
        """The gates as the trace header's `gates` object."""
        return asdict(self)


@dataclass(frozen=True)
class Settings:
    """Timeouts (ms) and bounds. `heartbeat_ms` defaults to a third of the visibility timeout."""

    visibility_timeout_ms: int = 30_000
    max_processing_ms: int = 60_000
    concurrency: int = 4
    fairness_ratio: int = 3
    guard_ttl_ms: int = 30_000
    state_ttl_ms: int = 86_400_000
    poll_interval_ms: int = 20
    heartbeat_ms: int | None = None

    def __post_init__(self) -> None:
        for name in ("visibility_timeout_ms", "max_processing_ms", "concurrency",
                     "guard_ttl_ms", "state_ttl_ms", "poll_interval_ms"):
            if getattr(self, name) <= 0:
                raise BadSettings(f"{name} must be positive, got {getattr(self, name)}")
        if self.fairness_ratio < 0:
            raise BadSettings(f"fairness_ratio must be >= 0, got {self.fairness_ratio}")
        if self.heartbeat_ms is not None and self.heartbeat_ms >= self.visibility_timeout_ms:
            raise BadSettings(
                f"heartbeat_ms ({self.heartbeat_ms}) must be below visibility_timeout_ms "
                f"({self.visibility_timeout_ms}), or entries expire between renewals")

    @property
    def heartbeat_interval_ms(self) -> int:
        """How often the heartbeat renews: `heartbeat_ms`, or VT/3."""
        return self.heartbeat_ms if self.heartbeat_ms is not None else max(1, self.visibility_timeout_ms // 3)

    def as_dict(self) -> dict[str, Any]:
        """The settings as the trace header's `settings` object."""
        d = asdict(self)
        d["heartbeat_ms"] = self.heartbeat_interval_ms
        return d
