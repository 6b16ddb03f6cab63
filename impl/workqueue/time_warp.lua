-- time_warp: a simulation on a real Redis server moves its clock forward by ARGV[2] ms, in one
-- script so that no real time passes between reading an idle time or TTL and writing it back
-- (done as separate calls, a loaded machine lost the milliseconds in between: the entry looked
-- younger than the clock said, and TraceWorkQueue rejected its idle read).
-- KEYS: the clock offset key, the stream. ARGV: group, ms, the prefix's key pattern.
local ms = tonumber(ARGV[2])
redis.call('INCRBY', KEYS[1], ms)
for _, row in ipairs(redis.call('XPENDING', KEYS[2], ARGV[1], '-', '+', 10000)) do
  redis.call('XCLAIM', KEYS[2], ARGV[1], row[2], 0, row[1], 'IDLE', tonumber(row[3]) + ms, 'JUSTID')
end
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[3], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local ttl = redis.call('PTTL', key)
    if ttl >= 0 then
      if ttl <= ms then
        redis.call('DEL', key)  -- it expires while time passes, as the server would do
      else
        redis.call('PEXPIRE', key, ttl - ms)
      end
    end
  end
until cursor == '0'
return 0
