-- invoke_start / invoke_end: node-local events, appended by the server so they fall in commit
-- order with everyone's steps. KEYS: stream, trace. ARGV: group, node, now, id, op, outcome,
-- result ('' for invoke_start).
local args = nil
if ARGV[7] ~= '' then args = {result = ARGV[7]} end
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], ARGV[5], ARGV[6], ARGV[4],
            entry_cmd(KEYS[1], ARGV[4]), args)
return 1
