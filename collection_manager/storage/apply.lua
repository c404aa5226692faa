-- Applies one chunk of a request group to one collection, atomically (Redis runs a
-- script without interleaving other commands). Requests at or below the applied-offset
-- watermark of their (topic, partition) are skipped, so replaying a chunk is a no-op.
--
-- KEYS: 1 contents (hash row -> multiplicity), 2 change log (stream), 3 time (string),
--       4 fences (hash replica -> max dead epoch), 5 applied offsets (hash), 6 stats (hash)
-- ARGV: 1 index key prefix, 2 watermark field "topic:partition", 3 log max length,
--       4 JSON {ic = {{name, position}, ...}, ops = {...}} (see storage/ops.py)
-- Rows are canonical JSON arrays; a row's index keys are derived here from its values.

local contents, log, time_key, fences, applied, stats =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local index_prefix, watermark_field, log_maxlen = ARGV[1], ARGV[2], ARGV[3]
local batch = cjson.decode(ARGV[4])
local indexed = batch.ic


local counts = {requests = 0, steps = 0, updates = 0, retractions = 0, fused_appends = 0,
                invalid_retractions = 0, fenced_invalid_retractions = 0, replays_skipped = 0}

local function index_keys(row)
  local values, keys = cjson.decode(row), {}
  for _, column in ipairs(indexed) do
    local value = values[column[2] + 1]
    if value ~= null then
      if type(value) == 'number' then value = string.format('%d', value) end
      keys[#keys + 1] = index_prefix .. column[1] .. ':' .. tostring(value)
    end
  end
  return keys
end

local function is_fenced(replica, epoch)
  local dead = redis.call('HGET', fences, replica)
  return dead and tonumber(dead) >= epoch
end

local function row_replica(row)
  return cjson.decode(row)[1]
end

local seq = 0
local function log_entry(time, row, diff)
  redis.call('XADD', log, 'MAXLEN', '~', log_maxlen, time .. '-' .. seq, 'r', row, 'd', diff)
  seq = seq + 1
end

local function add(time, row, diff)
  local new = redis.call('HINCRBY', contents, row, diff)
  if new == diff then
    for _, key in ipairs(index_keys(row)) do redis.call('SADD', key, row) end
  elseif new == 0 then
    redis.call('HDEL', contents, row)
    for _, key in ipairs(index_keys(row)) do redis.call('SREM', key, row) end
  end
  if new < 0 and diff < 0 then
    local replica = row_replica(row)
    if type(replica) == 'string' and redis.call('HEXISTS', fences, replica) == 1 then
      counts.fenced_invalid_retractions = counts.fenced_invalid_retractions + 1
    else
      counts.invalid_retractions = counts.invalid_retractions + 1
    end
  end
  log_entry(time, row, diff)
end

local function fence(replica, epoch)
  local dead = redis.call('HGET', fences, replica)
  if not dead or epoch > tonumber(dead) then redis.call('HSET', fences, replica, epoch) end
end

local function delete(time, op)
  for _, row in ipairs(candidates(contents, index_prefix, op.x)) do
    if op.f == nil or matches(op.f, cjson.decode(row)) then
      local multiplicity = tonumber(redis.call('HGET', contents, row))
      if multiplicity then
        add(time, row, -multiplicity)
        counts.retractions = counts.retractions + 1
      end
    end
  end
  if op.fr then fence(op.fr, op.fe) end
end

-- Appends merged between deletes: one time for all; the fuse decides per part.
local function append(time, op)
  for _, part in ipairs(op.p) do
    if is_fenced(part.r, part.e) then
      counts.fused_appends = counts.fused_appends + part.n
    else
      for _, update in ipairs(part.u) do add(time, update[1], update[2]) end
      counts.updates = counts.updates + #part.u
    end
    counts.requests = counts.requests + part.n
  end
end

local watermark = tonumber(redis.call('HGET', applied, watermark_field) or '-1')
-- Checked before any write: a script error does not roll back what it already wrote.
for _, op in ipairs(batch.ops) do
  if op.s <= watermark and op.o > watermark then
    -- Merged requests straddle the watermark: the caller must drop applied ones first.
    return redis.error_reply('request group straddles the applied offset ' .. watermark)
  end
end
for _, op in ipairs(batch.ops) do
  if op.o <= watermark then
    counts.replays_skipped = counts.replays_skipped + 1
  elseif op.k == 'f' then
    fence(op.fr, op.fe)
    watermark = op.o
  else
    local time = redis.call('INCR', time_key)
    seq = 0
    counts.steps = counts.steps + 1
    if op.k == 'a' then
      append(time, op)
    else
      delete(time, op)
      counts.requests = counts.requests + 1
    end
    watermark = op.o
  end
end
redis.call('HSET', applied, watermark_field, watermark)
local reply = {}
for name, value in pairs(counts) do
  if value > 0 then redis.call('HINCRBY', stats, name, value) end
  reply[#reply + 1] = name
  reply[#reply + 1] = value
end
return reply
