-- guard_release: compare-and-delete. KEYS: state, guard, ext, trace. ARGV: node, now, cmd, attempt.
local outcome = 'lost'
if redis.call('GET', KEYS[2]) == ARGV[4] then
  redis.call('DEL', KEYS[2])
  outcome = 'released'
end
record(KEYS[4], ARGV[1], ARGV[2], 'guard_release', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4]}})
return outcome
