-- external_call: the (simulated) external system receives a call with idempotency key = the
-- command id; it counts calls per key so duplicate calls are visible. The call is recorded
-- only while the attempt still owns the guard, checked in the same script (as put_if_owner
-- checks its write): an attempt whose guard lapsed or passed on is refused and calls nothing.
-- (The remote itself is called after this step; a stall between the two is the limit no
-- local check removes, the remote's idempotency key covers it.)
-- KEYS: state, guard, ext, trace. ARGV: node, now, cmd, attempt, check ('1'; '0' without the
-- attempt guard, which has no owner to check).
local outcome = 'refused'
local n = -1
if ARGV[5] == '0' or redis.call('GET', KEYS[2]) == ARGV[4] then
  n = redis.call('INCR', KEYS[3])
  outcome = 'called'
end
record(KEYS[4], ARGV[1], ARGV[2], 'external_call', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], key = ARGV[3]}})
return n
