"""Counterexample replay: a TLC counterexample as a schedule (`map.py`, pure), run on the
implementation by its adapter (`run.py` finds it; `impl/engine/replay.py` for the engine)."""
