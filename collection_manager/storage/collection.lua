-- One collection's keys and the writes every script shares (prepended after filter.lua).
--
-- KEYS: 1 contents (hash row -> multiplicity), 2 change log (stream), 3 time (string),
--       4 fences (hash replica -> max dead epoch), 5 applied offsets (hash), 6 stats (hash),
--       7 validity (hash row -> JSON {valid_until: diff}), 8 schedule (zset of
--       "valid_until|row" by valid_until), 9 expiration (string ms; absent: none)
-- ARGV: 1 index key prefix, 2 log max length, 3 JSON payload (has ic = {{name, pos}}),
--       4 the script's own argument, 5... rows of appends (see apply.lua)
-- Rows are canonical JSON arrays; a row's index keys are derived here from its values.
-- The change log holds one entry per time and up to LOG_ENTRY_UPDATES updates, id
-- "<time>-<seq>", fields r (JSON array of the rows) and d (JSON array of their diffs):
-- an XADD per update cost more than all other writes of an update together.

local contents, log, time_key, fences, applied, stats, validity, schedule, expiration_key =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local index_prefix, log_maxlen = ARGV[1], ARGV[2]
local payload = cjson.decode(ARGV[3])
local indexed = payload.ic

local counts = {requests = 0, steps = 0, updates = 0, retractions = 0, fused_appends = 0,
                scheduled_retractions = 0, invalid_retractions = 0,
                fenced_invalid_retractions = 0, replays_skipped = 0}

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

local LOG_ENTRY_UPDATES = 512
local log_time, log_seq, log_rows, log_diffs = nil, 0, {}, {}

local function flush_log()
  if #log_rows == 0 then return end
  redis.call('XADD', log, 'MAXLEN', '~', log_maxlen, log_time .. '-' .. log_seq,
             'r', '[' .. table.concat(log_rows, ',') .. ']',
             'd', '[' .. table.concat(log_diffs, ',') .. ']')
  log_seq, log_rows, log_diffs = log_seq + 1, {}, {}
end

local function log_update(time, row, diff)
  if time ~= log_time then
    flush_log()
    log_time, log_seq = time, 0
  elseif #log_rows == LOG_ENTRY_UPDATES then
    flush_log()
  end
  log_rows[#log_rows + 1] = row
  log_diffs[#log_diffs + 1] = string.format('%d', diff)  -- tostring turns 1e15 into 1e+15
end

local function next_time()
  counts.steps = counts.steps + 1
  return redis.call('INCR', time_key)
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
    local replica = cjson.decode(row)[1]
    if type(replica) == 'string' and redis.call('HEXISTS', fences, replica) == 1 then
      counts.fenced_invalid_retractions = counts.fenced_invalid_retractions + 1
    else
      counts.invalid_retractions = counts.invalid_retractions + 1
    end
  end
  log_update(time, row, diff)
end

-- Temporal validity: the ledger holds every pending retraction; the schedule only those
-- before the expiration (all of them when there is none).
local expiration_now = tonumber(redis.call('GET', expiration_key) or '')
local function in_horizon(valid_until)
  return not expiration_now or valid_until < expiration_now
end

local function ledger(row)
  local raw = redis.call('HGET', validity, row)
  return raw and cjson.decode(raw) or {}
end

local function save_ledger(row, entry)
  if next(entry) == nil then
    redis.call('HDEL', validity, row)
  else
    redis.call('HSET', validity, row, cjson.encode(entry))
  end
end

local function add_validity(valid_until, row, diff)
  local entry, key = ledger(row), tostring(valid_until)
  local total = (entry[key] or 0) + diff
  local member = key .. '|' .. row
  if total == 0 then
    entry[key] = nil
    redis.call('ZREM', schedule, member)
  else
    entry[key] = total
    if in_horizon(valid_until) then redis.call('ZADD', schedule, valid_until, member) end
  end
  save_ledger(row, entry)
end

-- Most collections have no temporal validity: then a delete need not look rows up in it.
local any_validity = redis.call('EXISTS', validity) == 1
local function drop_validity(row)
  if not any_validity then return end
  local raw = redis.call('HGET', validity, row)
  if not raw then return end
  for key, _ in pairs(cjson.decode(raw)) do redis.call('ZREM', schedule, key .. '|' .. row) end
  redis.call('HDEL', validity, row)
end

local function finish()
  flush_log()
  local reply = {}
  for name, value in pairs(counts) do
    if value > 0 then redis.call('HINCRBY', stats, name, value) end
    reply[#reply + 1] = name
    reply[#reply + 1] = value
  end
  return reply
end
