-- renew / release: touch an entry only while this consumer still owns it (XPENDING owner check,
-- then XCLAIM 0 JUSTID, in one script so no peer's claim can land in between).
-- KEYS: stream, trace. ARGV: group, node, now, id, op ('renew' or 'release'),
-- check_owner ('1'; '0' is the unguarded calibration that claims it back from a peer).
-- Logs args.idle_ms: the idle time of the record the XPENDING read found, as of the step's now
-- (the touch's own stamp when it touched), before the touch reset it.
local id = ARGV[4]
local op = ARGV[5]
local ok_outcome = 'renewed'
if op == 'release' then ok_outcome = 'touched' end
local p, read_ms = pending_read(KEYS[1], ARGV[1], id)
local outcome = 'refused'
if #p > 0 and (p[1][2] == ARGV[2] or ARGV[6] == '0') then
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
  outcome = ok_outcome
end
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], op, outcome, id, entry_cmd(KEYS[1], id),
            function() return {idle_ms = idle_of(p, read_ms)} end)
return outcome == ok_outcome and 1 or 0
