-- external_call: the (simulated) external system receives a call with idempotency key = the
-- command id; it counts calls per key so duplicate calls are visible.
-- KEYS: state, guard, ext, trace. ARGV: node, now, cmd, attempt.
local n = redis.call('INCR', KEYS[3])
record(KEYS[4], ARGV[1], ARGV[2], 'external_call', 'called', cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], key = ARGV[3]}})
return n
