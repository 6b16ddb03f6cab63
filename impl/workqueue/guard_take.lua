-- guard_take: SET cmd-attempt:<id> <attempt> NX PX. KEYS: state, guard, ext, trace.
-- ARGV: node, now, cmd, attempt, guard_ttl_ms.
local ok = redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[5])
local outcome = ok and 'taken' or 'busy'
record(KEYS[4], ARGV[1], ARGV[2], 'guard_take', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4]}})
return outcome
