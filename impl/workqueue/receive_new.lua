-- receive_new: XREADGROUP ... > for one never-delivered entry. KEYS: stream, trace.
-- ARGV: group, node, now. Returns {id, payload, deliveries} or false; an empty poll records nothing.
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if not r or #r == 0 or #r[1][2] == 0 then return false end
local e = r[1][2][1]
local id = e[1]
local cmd = field_of(e[2], 'cmd')
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'receive_new', 'delivered', id, cmd, nil)
local st = entry_state(KEYS[1], ARGV[1], id)
return {id, field_of(e[2], 'data') or '', st.deliveries}
