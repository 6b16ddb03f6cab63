-- line.lua: a trace line that no store step writes: a fault where it happened, by the node it
-- hit (crash, close, heartbeat_lag, pause, reject, ack_fail, offer_fail), or a consumer's stop
-- with the permits it still holds. Appended by the server, so that it falls in commit order
-- with every other step, at the server's clock (an observed window's start, args.since, is
-- that clock less the lateness the node measured). KEYS: trace. ARGV: node, op, outcome,
-- late_ms ('' for none), args as JSON ('' for none).
local args = nil
if ARGV[5] ~= '' then args = cjson.decode(ARGV[5]) end
if ARGV[4] ~= '' then
  args = args or {}
  args.since = server_now_ms() - tonumber(ARGV[4])
end
local extra = nil
if args then extra = {args = args} end
record(KEYS[1], ARGV[1], nil, ARGV[2], ARGV[3], {}, extra)
return 1
