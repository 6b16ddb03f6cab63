-- offer: XADD one message. KEYS: stream, trace. ARGV: group, node, now, id ('*' or explicit),
-- payload, cmd ('' when the message is not a command's).
local fields = {'data', ARGV[5]}
local cmd = nil
if ARGV[6] ~= '' then
  cmd = ARGV[6]
  fields[3] = 'cmd'
  fields[4] = cmd
end
local id = redis.call('XADD', KEYS[1], ARGV[4], unpack(fields))
queue_event(KEYS[1], ARGV[1], KEYS[2], ARGV[2], ARGV[3], 'offer', 'added', id, cmd, nil)
return id
