-- submit_state: create the command's state record PENDING, only if absent (idempotent by id).
-- KEYS: state, guard, ext, trace. ARGV: node, now, cmd, state_ttl_ms.
local ok = redis.call('SET', KEYS[1], 'PENDING', 'NX', 'PX', ARGV[4])
local outcome = ok and 'created' or 'exists'
record(KEYS[4], ARGV[1], ARGV[2], 'submit_state', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]), {cmd = ARGV[3]})
return outcome
