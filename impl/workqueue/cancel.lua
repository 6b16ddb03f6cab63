-- cancel: take the guard, write CANCELLED, release, in one step; refused while a handler holds
-- the guard. KEYS: state, guard, ext, trace. ARGV: node, now, cmd, attempt, guard_ttl_ms,
-- state_ttl_ms, take_guard ('1'; '0' is the unguarded calibration that ignores a holder).
local status = redis.call('GET', KEYS[1])
if not status then return 'missing' end
local outcome
if status == 'SUCCEEDED' or status == 'FAILED' or status == 'CANCELLED' then
  outcome = 'terminal'
elseif ARGV[7] == '1' and not redis.call('SET', KEYS[2], ARGV[4], 'NX', 'PX', ARGV[5]) then
  outcome = 'busy'
else
  redis.call('SET', KEYS[1], 'CANCELLED', 'PX', ARGV[6])
  if ARGV[7] == '1' then redis.call('DEL', KEYS[2]) end
  outcome = 'cancelled'
end
record(KEYS[4], ARGV[1], ARGV[2], 'cancel', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4]}})
return outcome
