-- put_if_owner: check the guard's owner and write the state, in one script, so a guard that
-- expires between a read and a write cannot let a stale attempt overwrite the new owner's state.
-- KEYS: state, guard, ext, trace. ARGV: node, now, cmd, attempt, status, state_ttl_ms,
-- check ('1'; '0' is the write half of the unguarded check-then-write calibration).
local outcome = 'refused'
if ARGV[7] == '0' or redis.call('GET', KEYS[2]) == ARGV[4] then
  redis.call('SET', KEYS[1], ARGV[5], 'PX', ARGV[6])
  outcome = 'written'
end
record(KEYS[4], ARGV[1], ARGV[2], 'put_if_owner', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], status = ARGV[5]}})
return outcome
