-- time_warp: a simulation on a real Redis server moves its clock forward by ARGV[2] ms, in one
-- script so that no real time passes between reading an idle time or TTL and writing it back
-- (done as separate calls, a loaded machine lost the milliseconds in between: the entry looked
-- younger than the clock said, and TraceWorkQueue rejected its idle read).
-- KEYS: the clock offset key, the stream. ARGV: group, ms, the prefix's key pattern.
--
-- Redis measures an idle time against its clock when each command runs, also inside a script:
-- an XCLAIM IDLE written back a few ms after the XPENDING that read the idle time made the entry
-- that much younger than the clock said (a server descheduled between them, on a busy 2-core
-- machine: the workqueue machine on real Redis was rejected at a renewal's idle read, 3 ms off
-- the stamp its trace logged). So each entry's stamp is read and written at pinned times: the
-- two TIME reads around the command in one millisecond (as prelude.lua's pending_read).
local ms = tonumber(ARGV[2])
redis.call('INCRBY', KEYS[1], ms)

local function real_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

for _, row in ipairs(redis.call('XPENDING', KEYS[2], ARGV[1], '-', '+', 10000)) do
  local id = row[1]
  local stamp
  for _ = 1, 8 do
    local t0 = real_now_ms()
    local p = redis.call('XPENDING', KEYS[2], ARGV[1], id, id, 1)
    local t1 = real_now_ms()
    stamp = t1 - tonumber(p[1][3])
    if t0 == t1 then break end
  end
  for _ = 1, 8 do
    local t0 = real_now_ms()
    redis.call('XCLAIM', KEYS[2], ARGV[1], row[2], 0, id, 'IDLE', t0 - (stamp - ms), 'JUSTID')
    if real_now_ms() == t0 then break end
  end
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
