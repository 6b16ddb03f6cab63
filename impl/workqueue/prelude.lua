-- prelude.lua: helpers shared by every script; scripts.py puts this text in front of each one.
-- Every script that commits a step appends its trace event here, in the same script, so that
-- Redis orders the trace across processes. Every state value is read after the step; the one
-- value read before it is args.idle_ms (idle_of, below).

-- The server's clock. An event's `now` is read once, when the script starts, before its
-- writes, unless the script stamps the entry's PEL record itself (a delivery, a reclaim, a
-- renewal): then the step is logged at that stamp, the time the server took the step at.
-- Every last_touched is the PEL stamp Redis keeps, exactly (pending_read below).
--
-- Why exactly: a server descheduled inside a script (a loaded 2-core machine, 4 ms at a time)
-- moved the times a script reads apart. A delivery stamped after its script's start, logged at
-- the start, was read back 4 ms later by the next step; an idle time read just before the
-- descheduling and subtracted from a TIME read after it made a stamp look 4 ms late. Both went
-- past the trace's clock_slack_ms, and TraceWorkQueue rejected the bench's traces. (Reading TIME
-- anew for `now` after the writes made a fresh renewal look idle for 1 ms; a stamp read against
-- the start time could fall before the trace's first `now`: found by TraceWorkQueue on real
-- Redis runs, and both excluded here.)
--
-- The last key of every script is the prefix's clock offset (`<prefix>:clock-offset-ms`, see
-- store.py): absent in production (0), set by a simulation on a real server, which moves time
-- forward by raising it and ageing the PEL and TTLs alike (sim_redis.RedisTimeWarp).
local CLOCK_OFFSET_MS = tonumber(redis.call('GET', KEYS[#KEYS]) or '0')

local function fresh_now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + CLOCK_OFFSET_MS
end

local SCRIPT_NOW_MS = fresh_now_ms()
local STEP_NOW_MS = SCRIPT_NOW_MS

local function server_now_ms()
  return STEP_NOW_MS
end

-- XPENDING for one entry, and the server's clock (ms) its idle times were measured at: the
-- server measures them when the command runs, which the two TIME reads around it pin down only
-- when both fall in one millisecond; otherwise (a millisecond boundary, or the server
-- descheduled in between) the read is taken again. So `t - idle` is the stamp itself.
local function pending_read(stream, group, id)
  local p, t
  for _ = 1, 8 do
    local t0 = fresh_now_ms()
    p = redis.call('XPENDING', stream, group, id, id, 1)
    t = fresh_now_ms()
    if t == t0 then break end
  end
  return p, t
end

local function entry_state(stream, group, id)
  local p, read_ms = pending_read(stream, group, id)
  if #p > 0 then
    local rec = p[1]
    local stamp = read_ms - tonumber(rec[3])
    -- A stamp after the script's start was written by this script (scripts run one at a time):
    -- the step is logged at it (STEP_NOW_MS), so it reads idle 0, as the next step will see it.
    if stamp > STEP_NOW_MS then STEP_NOW_MS = stamp end
    return {pending = true, owner = rec[2],
            last_touched = stamp,
            deliveries = tonumber(rec[4])}
  end
  if #redis.call('XRANGE', stream, id, id) > 0 then
    -- Not yet delivered: nothing measures its idle time; it is 0 (last_touched = now), as
    -- WorkQueue.tla keeps idle at 0 for an entry that is not pending.
    return {pending = false, owner = cjson.null, last_touched = fresh_now_ms(), deliveries = 0}
  end
  return cjson.null
end

-- The idle time (ms), as of the step's `now`, of the entry's PEL record a step reads before it
-- writes (`pending_rows, read_ms` from pending_read), or JSON null when the entry is not
-- pending (never delivered, or acked and deleted). Steps that read before writing log it as
-- args.idle_ms, because their write (a renewal's idle reset, an ack's delete) hides what it
-- replaced: without it a renewal dropped or committed twice leaves the trace unchanged (found
-- by the mutation self-test). Read once `now` is settled (queue_event calls a function args).
local function idle_of(pending_rows, read_ms)
  if #pending_rows > 0 then return server_now_ms() - (read_ms - tonumber(pending_rows[1][3])) end
  return cjson.null
end

local function field_of(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end

local function entry_cmd(stream, id)
  local e = redis.call('XRANGE', stream, id, id)
  if #e == 0 then return nil end
  return field_of(e[1][2], 'cmd')
end

local function cmd_state(state_key, guard_key, ext_key)
  local status = redis.call('GET', state_key)
  local owner = redis.call('GET', guard_key)
  local calls = tonumber(redis.call('GET', ext_key) or '0')
  local command = cjson.null
  if status then command = {status = status} end
  if not owner then owner = cjson.null end
  return {command = command, guard = {owner = owner}, external_calls = calls}
end

-- One trace event; seq is assigned on export. The event's `now` is the server's clock at
-- commit, the clock Redis measures idle times and TTLs with, so that `now - last_touched` is
-- exactly the idle time XAUTOCLAIM saw (the caller's clock, `node_now`, may lag it by a
-- millisecond or two and is not recorded). In simulation both are the virtual clock.
local function record(trace_key, node, node_now, op, outcome, state, extra)
  local ev = {node = node, op = op, now = server_now_ms(), outcome = outcome, state = state}
  if extra then
    for k, v in pairs(extra) do ev[k] = v end
  end
  redis.call('RPUSH', trace_key, cjson.encode(ev))
end

-- `args`: a table, or a function returning one, called once the entry's state is read (which
-- settles the step's `now`: entry_state).
local function queue_event(stream, group, trace_key, node, now, op, outcome, id, cmd, args)
  local extra = {entry = id}
  if cmd then extra.cmd = cmd end
  local state = {entry = entry_state(stream, group, id)}
  if type(args) == 'function' then args = args() end
  if args then extra.args = args end
  record(trace_key, node, now, op, outcome, state, extra)
end
