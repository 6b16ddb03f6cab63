-- Named queries of the engine's SQL stores, shared by SQLite and MySQL/MariaDB.
-- Parameters are written :name; {p} is the table prefix. Each query is one statement.
-- A dialect file (sqlite.sql, mysql.sql) overrides a name where the syntax differs.

-- name: read_lock
SELECT n FROM {p}wf_lock WHERE wf = :wf

-- name: read_task
SELECT owner, task_id, status, run_after, version, retry_count, payload, type
FROM {p}tasks WHERE owner = :owner AND task_id = :task_id

-- name: insert_task
INSERT INTO {p}tasks (owner, task_id, status, run_after, version, retry_count, payload, type)
VALUES (:owner, :task_id, :status, :run_after, :version, :retry_count, :payload, :type)

-- name: update_task
-- The optimistic write: zero rows updated means the version moved under us.
UPDATE {p}tasks
SET status = :status, run_after = :run_after, version = :version,
    retry_count = :retry_count, payload = :payload, type = :type
WHERE owner = :owner AND task_id = :task_id AND version = :expected_version

-- name: delete_task
DELETE FROM {p}tasks WHERE owner = :owner AND task_id = :task_id AND version = :expected_version

-- name: read_fence
SELECT version FROM {p}task_fences WHERE owner = :owner AND task_id = :task_id

-- name: write_fence
-- REPLACE: SQLite and MySQL both take it (one row per key, the last removed version).
REPLACE INTO {p}task_fences (owner, task_id, version) VALUES (:owner, :task_id, :version)

-- name: due_tasks
SELECT owner, task_id, status, run_after, version, retry_count, payload, type
FROM {p}tasks
WHERE status IN ('PENDING', 'RUNNING') AND run_after <= :now
ORDER BY run_after, task_id
LIMIT :limit

-- name: read_instance
SELECT wf, workflow, status, version, state, result FROM {p}instances WHERE wf = :wf

-- name: read_state
-- The workflow's instance and task rows in one read (a trace event records both after the
-- write); a row that does not exist comes back as NULLs.
SELECT i.wf, i.workflow, i.status, i.version, i.state, i.result,
       t.owner, t.task_id, t.status, t.run_after, t.version, t.retry_count, t.payload, t.type
FROM (SELECT :wf AS wf) AS k
LEFT JOIN {p}instances AS i ON i.wf = k.wf
LEFT JOIN {p}tasks AS t ON t.owner = :owner AND t.task_id = k.wf

-- name: insert_instance
INSERT INTO {p}instances (wf, workflow, status, version, state, result)
VALUES (:wf, :workflow, :status, :version, :state, :result)

-- name: update_instance
UPDATE {p}instances
SET status = :status, version = :version, state = :state, result = :result
WHERE wf = :wf AND version = :expected_version

-- name: list_instances
SELECT wf, workflow, status, version, state, result FROM {p}instances ORDER BY wf

-- name: record_event
INSERT INTO {p}trace (wf, wf_seq, node, op, now, args, outcome, state)
VALUES (:wf, :wf_seq, :node, :op, :now, :args, :outcome, :state)

-- name: read_events
SELECT seq, wf, wf_seq, node, op, now, args, outcome, state FROM {p}trace ORDER BY seq

-- name: drop_tasks
DROP TABLE IF EXISTS {p}tasks

-- name: drop_instances
DROP TABLE IF EXISTS {p}instances

-- name: drop_wf_lock
DROP TABLE IF EXISTS {p}wf_lock

-- name: drop_task_fences
DROP TABLE IF EXISTS {p}task_fences

-- name: drop_trace
DROP TABLE IF EXISTS {p}trace
