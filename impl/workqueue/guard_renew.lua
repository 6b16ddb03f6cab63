-- guard_renew: compare-and-set PEXPIRE. KEYS: state, guard, ext, trace.
-- ARGV: node, now, cmd, attempt, guard_ttl_ms.
-- Logs args.ttl_ms, the TTL this step writes (or would have written: lost), as guard_take does.
local outcome = 'lost'
if redis.call('GET', KEYS[2]) == ARGV[4] then
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  outcome = 'renewed'
end
record(KEYS[4], ARGV[1], ARGV[2], 'guard_renew', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], ttl_ms = tonumber(ARGV[5])}})
return outcome
