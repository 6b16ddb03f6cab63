-- reclaim: XAUTOCLAIM min-idle = VT, one entry, from a cursor the caller keeps per queue.
-- KEYS: stream, trace. ARGV: group, node, now, vt_ms, cursor.
-- Returns {next_cursor, id, payload, deliveries, cmd} or {next_cursor}.
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[4], ARGV[5], 'COUNT', 1)
local cursor = r[1]
local claimed = r[2]
if #claimed == 0 or not claimed[1] or not claimed[1][1] then return {cursor} end
local e = claimed[1]
local id = e[1]
local cmd = field_of(e[2], 'cmd')
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'reclaim', 'claimed', id, cmd, nil)
local st = entry_state(KEYS[1], ARGV[1], id)
return {cursor, id, field_of(e[2], 'data') or '', st.deliveries, cmd or ''}
