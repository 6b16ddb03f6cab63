-- ack: XACK and XDEL as one step (the MULTI XACK XDEL EXEC of the design, as a script so the
-- trace event is appended in the same step). KEYS: stream, trace. ARGV: group, node, now, id.
-- `failed`: the entry was no longer pending (another delivery acked it first).
local id = ARGV[4]
local cmd = entry_cmd(KEYS[1], id)
local n = redis.call('XACK', KEYS[1], ARGV[1], id)
local outcome = 'failed'
if n == 1 then
  redis.call('XDEL', KEYS[1], id)
  outcome = 'acked'
end
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'ack', outcome, id, cmd, nil)
return n
