"""Reference implementations of the two designs leaseproof checks.

`impl.engine` is a durable workflow engine's scheduler (leases, versions, per-node in-memory
queues) on SQLite or MySQL; `impl.workqueue` is a Redis Streams work queue with
invocation-scoped leases and a command layer. Both record every committed store step as an
NDJSON trace (`impl.trace`), which is all that `conformance` sees of them.
"""
