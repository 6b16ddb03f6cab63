"""The reference workflow engine: a lease-based scheduler on SQLite, MySQL or memory.

Nodes share one store; each node has an in-memory execution queue, a fetch loop, a taker that
runs workflow handlers with lease renewal, and the start/signal/result API. Every store
transaction records one trace event in the same transaction (`store.py`), so the store orders
the trace even across processes. `sim.py` runs nodes step by step under a seeded scheduler and
a virtual clock; `threads.py` runs the same code with threads and the wall clock.
"""
