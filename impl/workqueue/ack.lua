-- ack: XACK and XDEL as one step (the MULTI XACK XDEL EXEC of the design, as a script so the
-- trace event is appended in the same step). Like the MULTI block it does not look at the
-- owner or at XACK's answer: acking an entry already acked and deleted is a no-op, `acked`.
-- KEYS: stream, trace. ARGV: group, node, now, id, fail ('1': the transaction is aborted, as
-- an EXECABORT or a lost connection would; nothing commits and the step is logged `failed`),
-- cmd (the delivery's command id, '' if none: names it even when the entry is already gone).
local id = ARGV[4]
-- The PEL record the ack replaces, read first: the trace logs its idle time (prelude idle_of).
-- (An ack stamps nothing, so its `now` is its start, settled already.)
local args = {idle_ms = idle_of(pending_read(KEYS[1], ARGV[1], id))}
local cmd = entry_cmd(KEYS[1], id)
if not cmd and ARGV[6] and ARGV[6] ~= '' then cmd = ARGV[6] end
if ARGV[5] == '1' then
  queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'ack', 'failed', id, cmd, args)
  return -1
end
local n = redis.call('XACK', KEYS[1], ARGV[1], id)
redis.call('XDEL', KEYS[1], id)
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'ack', 'acked', id, cmd, args)
return n
