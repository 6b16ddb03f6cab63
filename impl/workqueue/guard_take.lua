-- guard_take: SET cmd-attempt:<id> <attempt> NX PX. KEYS: state, guard, ext, trace.
-- ARGV: node, now, cmd, attempt, guard_ttl_ms.
-- Logs args.ttl_ms, the TTL this step writes (or would have written: busy): TraceCommandQueue
-- takes the guard's expiry from it (now + ttl_ms) and checks it against the header's setting.
local ok = redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[5])
local outcome = ok and 'taken' or 'busy'
record(KEYS[4], ARGV[1], ARGV[2], 'guard_take', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], ttl_ms = tonumber(ARGV[5])}})
return outcome
