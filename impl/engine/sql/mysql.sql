-- MySQL/MariaDB's schema and the queries whose syntax differs from SQLite's.
-- InnoDB: row locks; every transaction locks its workflow's wf_lock row first (see store.py).

-- name: create_tasks
CREATE TABLE IF NOT EXISTS {p}tasks (
    owner VARCHAR(64) NOT NULL,
    task_id VARCHAR(128) NOT NULL,
    status VARCHAR(16) NOT NULL,
    run_after BIGINT NOT NULL,
    version BIGINT NOT NULL,
    retry_count INT NOT NULL,
    payload TEXT,
    type VARCHAR(32) NOT NULL,
    PRIMARY KEY (owner, task_id),
    KEY {p}tasks_due (status, run_after)
) ENGINE=InnoDB

-- name: create_instances
CREATE TABLE IF NOT EXISTS {p}instances (
    wf VARCHAR(128) NOT NULL PRIMARY KEY,
    workflow VARCHAR(128) NOT NULL,
    status VARCHAR(16) NOT NULL,
    version BIGINT NOT NULL,
    state TEXT NOT NULL,
    result TEXT
) ENGINE=InnoDB

-- name: create_task_fences
-- The version of the last row removed under a key (see sqlite.sql).
CREATE TABLE IF NOT EXISTS {p}task_fences (
    owner VARCHAR(128) NOT NULL,
    task_id VARCHAR(128) NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (owner, task_id)
) ENGINE=InnoDB

-- name: create_wf_lock
CREATE TABLE IF NOT EXISTS {p}wf_lock (
    wf VARCHAR(128) NOT NULL PRIMARY KEY,
    n BIGINT NOT NULL
) ENGINE=InnoDB

-- name: create_trace
CREATE TABLE IF NOT EXISTS {p}trace (
    seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    wf VARCHAR(128) NOT NULL,
    wf_seq BIGINT NOT NULL,
    node VARCHAR(64) NOT NULL,
    op VARCHAR(32) NOT NULL,
    now BIGINT NOT NULL,
    args TEXT NOT NULL,
    outcome VARCHAR(32) NOT NULL,
    state TEXT NOT NULL
) ENGINE=InnoDB

-- name: ensure_lock_row
INSERT IGNORE INTO {p}wf_lock (wf, n) VALUES (:wf, 0)

-- name: lock_workflow
-- Serialises every transaction on one workflow and numbers its events in commit order;
-- LAST_INSERT_ID(expr) hands the new number back without another round trip.
UPDATE {p}wf_lock SET n = LAST_INSERT_ID(n + 1) WHERE wf = :wf
