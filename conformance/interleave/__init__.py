"""Controlled interleavings of real threads (`leaseproof interleave`).

    runtime.py     one run: real threads one at a time, a point at every synchronization,
                   virtual time, deadlocks and hangs reported with the threads' places
    primitives.py  the controlled Lock, RLock, Condition, Event, Thread, sleep and clock
                   (impl/sync.py's shape), `calls` for a store, `invariant`, `observe`
    strategies.py  random walk, PCT, replay, Hypothesis-drawn choices
    exhaustive.py  bounded exhaustive search (preemption bound, sleep sets, Knuth's estimate)
    explore.py     many runs of a scenario, their traces validated in batches
    validate.py    the trace check those batches go through
    report.py      a failure's schedule and its replay command
"""
