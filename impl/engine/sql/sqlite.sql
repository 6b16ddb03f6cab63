-- SQLite's schema and the queries whose syntax differs from MySQL's.
-- Several processes share one file: WAL journal, and BEGIN IMMEDIATE serialises writers.

-- name: create_tasks
CREATE TABLE IF NOT EXISTS {p}tasks (
    owner TEXT NOT NULL,
    task_id TEXT NOT NULL,
    status TEXT NOT NULL,
    run_after INTEGER NOT NULL,
    version INTEGER NOT NULL,
    retry_count INTEGER NOT NULL,
    payload TEXT,
    type TEXT NOT NULL,
    PRIMARY KEY (owner, task_id)
)

-- name: create_tasks_due_index
CREATE INDEX IF NOT EXISTS {p}tasks_due ON {p}tasks (status, run_after)

-- name: create_instances
CREATE TABLE IF NOT EXISTS {p}instances (
    wf TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    status TEXT NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    result TEXT
)

-- name: create_task_fences
-- The version of the last row removed under a key, so that a row inserted again continues it:
-- a stale holder's version never comes back (issue 38's ABA case; Engine.tla ContinueVersions).
CREATE TABLE IF NOT EXISTS {p}task_fences (
    owner TEXT NOT NULL,
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (owner, task_id)
)

-- name: create_wf_lock
CREATE TABLE IF NOT EXISTS {p}wf_lock (wf TEXT PRIMARY KEY, n INTEGER NOT NULL)

-- name: create_trace
-- AUTOINCREMENT: sequence numbers are never reused, so the trace order is the commit order.
CREATE TABLE IF NOT EXISTS {p}trace (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    wf TEXT NOT NULL,
    wf_seq INTEGER NOT NULL,
    node TEXT NOT NULL,
    op TEXT NOT NULL,
    now INTEGER NOT NULL,
    args TEXT NOT NULL,
    outcome TEXT NOT NULL,
    state TEXT NOT NULL
)

-- name: ensure_lock_row
INSERT OR IGNORE INTO {p}wf_lock (wf, n) VALUES (:wf, 0)

-- name: lock_workflow
-- Serialises every transaction on one workflow and numbers its events in commit order.
UPDATE {p}wf_lock SET n = n + 1 WHERE wf = :wf RETURNING n
