"""The command layer's store: state records, attempt guards and the (simulated) external system,
one Lua script per step of the Command layer table in `tla/README.md`."""

from __future__ import annotations


from impl.workqueue.store import Steps, _text

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
STATUSES = frozenset({"PENDING", "SUBMITTING", "PROCESSING"}) | TERMINAL


class CommandStore(Steps):
    """State `cmd:<id>`, guard `cmd-attempt:<id>`, external call counter `ext:<id>`."""

    def _keys(self, cmd: str) -> list[str]:
        p = self.prefix
        return [f"{p}:cmd:{cmd}", f"{p}:cmd-attempt:{cmd}", f"{p}:ext:{cmd}", self.trace_key]

    def submit_state(self, node: str, now: int, cmd: str, state_ttl_ms: int) -> bool:
        """`SET cmd:<id> PENDING NX PX`: True if created, False if it already existed."""
        return _text(self.run("submit_state", "submit_state", node, self._keys(cmd), [node, now, cmd, state_ttl_ms])) == "created"

    def guard_take(self, node: str, now: int, cmd: str, attempt: str, ttl_ms: int) -> bool:
        """`SET cmd-attempt:<id> <attempt> NX PX`: True if this attempt now holds the guard."""
        return _text(self.run("guard_take", "guard_take", node, self._keys(cmd), [node, now, cmd, attempt, ttl_ms])) == "taken"

    def guard_renew(self, node: str, now: int, cmd: str, attempt: str, ttl_ms: int) -> bool:
        """Compare-and-set PEXPIRE: False when the guard is no longer this attempt's."""
        return _text(self.run("guard_renew", "guard_renew", node, self._keys(cmd), [node, now, cmd, attempt, ttl_ms])) == "renewed"

    def guard_release(self, node: str, now: int, cmd: str, attempt: str) -> bool:
        """Compare-and-delete: False when the guard was already someone else's (or gone)."""
        return _text(self.run("guard_release", "guard_release", node, self._keys(cmd), [node, now, cmd, attempt])) == "released"

    def put_if_owner(self, node: str, now: int, cmd: str, attempt: str, status: str,
                     state_ttl_ms: int, *, checked: bool = True) -> bool:
        """Write `status` only while `attempt` holds the guard (`checked=False` writes blindly:
        the second half of the unguarded check-then-write)."""
        return _text(self.run("put_if_owner", "put_if_owner", node, self._keys(cmd),
                              [node, now, cmd, attempt, status, state_ttl_ms, "1" if checked else "0"])) == "written"

    def guard_owner(self, cmd: str) -> str | None:
        """The guard's current owner (a plain read: the first half of check-then-write)."""
        v = self.client.get(f"{self.prefix}:cmd-attempt:{cmd}")
        return None if v is None else _text(v)

    def external_call(self, node: str, now: int, cmd: str, attempt: str, *, checked: bool = True) -> int:
        """Call the external system with idempotency key = `cmd` while `attempt` holds the guard
        (checked in the same script); returns its call count, or -1 when the attempt no longer
        owns the guard (`refused`: nothing called). `checked=False`: no guard to check."""
        return int(self.run("external_call", "external_call", node, self._keys(cmd),
                            [node, now, cmd, attempt, "1" if checked else "0"]))

    def cancel(self, node: str, now: int, cmd: str, attempt: str, guard_ttl_ms: int,
               state_ttl_ms: int, *, take_guard: bool = True) -> str:
        """Cancel: `cancelled`, `busy` (a handler holds the guard), `terminal`, or `missing`."""
        return _text(self.run("cancel", "cancel", node, self._keys(cmd),
                              [node, now, cmd, attempt, guard_ttl_ms, state_ttl_ms, "1" if take_guard else "0"]))

    def status(self, cmd: str) -> str | None:
        """The command's status, or None if it has no record."""
        v = self.client.get(f"{self.prefix}:cmd:{cmd}")
        return None if v is None else _text(v)

    def external_calls(self, cmd: str) -> int:
        """How many times the external system was called for `cmd`."""
        return int(self.client.get(f"{self.prefix}:ext:{cmd}") or 0)

    def statuses(self) -> dict[str, str]:
        """Every command's status (for summaries)."""
        out: dict[str, str] = {}
        marker = f"{self.prefix}:cmd:"
        for key in self.client.scan_iter(match=f"{marker}*", count=1000):
            k = _text(key)
            v = self.client.get(k)
            if v is not None:
                out[k[len(marker):]] = _text(v)
        return out
