-- receive_new: XREADGROUP ... > for one never-delivered entry. KEYS: stream, trace.
-- ARGV: group, node, now. Returns {id, payload, deliveries, cmd} or false; an empty poll records nothing.
local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
if not r or #r == 0 then return false end
-- Redis answers {{stream, entries}}; fakeredis 2.41 answers {stream, entries} for one stream.
local entries = r[2]
if type(r[1]) == 'table' then entries = r[1][2] end
if not entries or #entries == 0 then return false end
local e = entries[1]
local id = e[1]
local cmd = field_of(e[2], 'cmd')
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'receive_new', 'delivered', id, cmd, nil)
local st = entry_state(KEYS[1], ARGV[1], id)
return {id, field_of(e[2], 'data') or '', st.deliveries, cmd or ''}
