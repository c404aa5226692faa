-- Part 2 of the library (see library.py): one call's view of a collection and the writes
-- cm_apply, cm_continue, cm_due and cm_horizon share. Defines open_collection(keys, args)
-- and pending_delete; uses the generated COUNTERS, COLLECTION_KEYS and LOG_* field names.
--
-- keys: the collection's keys in the order of COLLECTION_KEYS (keys.py FUNCTION_KEYS):
--   contents (hash row -> multiplicity), log (stream), time (string), fences (hash replica
--   -> max dead epoch), applied (hash "topic:partition" -> offset), stats (hash counter ->
--   total), validity (hash row -> JSON {valid_until: diff}), schedule (zset of
--   "valid_until|row" by valid_until), expiration (string ms; absent: none), refused (hash
--   "topic:partition:offset" -> why), expiries (zset row -> when its TTL expires, ms),
--   pending (hash: the delete in progress), bound (string: at least every row's
--   |multiplicity|; absent: unknown unless contents is empty)
-- args: 1 index key prefix, 2 log max length, 3 JSON payload (has ic = {{name, pos}}, ds,
--   the rows of a delete step, and now, the consumer's clock in ms), 4 the function's own
--   argument, 5... texts the payload's operations address: rows of appends, queries of
--   deletes (see ops.py)
-- Rows are canonical JSON arrays; a row's index keys are derived here from its values.
--
-- Top-level locals of a library live as long as the library, so everything a call changes
-- lives in what open_collection returns, made afresh for each call. Its writes are
-- closures over that call's keys so that the hot path (add, per update) reads upvalues,
-- as plain script locals did, not fields of a context table.

-- An integer of the numeric domain (|n| <= 2^53 - 1) as Redis and JSON want it. Never
-- tostring or a number argument of redis.call: both write 14 significant digits, so
-- 9007199254740991 would become 9.007199254741e+15.
local function integer(n)
  if n == 1 then return '1' elseif n == -1 then return '-1' end
  return string.format('%d', n)
end

-- The largest integer the domain holds (docs/concepts/collections-and-time.md): doubles hold every integer up
-- to it exactly, and a sum past it lands past it (rounding is monotonic).
local INT_LIMIT = 9007199254740991

-- The index set keys of a row: <index_prefix><column>:<value> per non-null indexed column.
local function row_index_keys(indexed, index_prefix, row)
  local values, keys, null = cjson.decode(row), {}, cjson.null
  for _, column in ipairs(indexed) do
    local value = values[column[2] + 1]
    if value ~= null then
      if type(value) == 'number' then value = string.format('%d', value) end
      keys[#keys + 1] = index_prefix .. column[1] .. ':' .. tostring(value)
    end
  end
  return keys
end

-- The change log holds one entry per time and up to LOG_ENTRY_UPDATES updates, id
-- "<time>-<seq>", fields LOG_ROWS (JSON array of the rows), LOG_DIFFS (JSON array of
-- their diffs) and LOG_CLOCK (Redis's clock at the call, ms): an XADD per update cost more
-- than all other writes of an update together.
local LOG_ENTRY_UPDATES = 512

-- A buffer of one call's log updates: update(time, row, diff), and flush() at the end;
-- resume(time, seq) goes on with a time a previous call began (a delete in steps), and
-- next_seq() flushes and tells where the next call goes on.
local function open_log(log, log_maxlen)
  local log_time, log_seq, log_rows, log_diffs, clock = nil, 0, {}, {}, nil
  local function flush()
    if #log_rows == 0 then return end
    -- Once per call, at its first entry. TIME is not deterministic: Redis 7 replicates a
    -- function's effects, not the call, so replicas and the AOF get the value taken here.
    if not clock then
      local now = redis.call('TIME')  -- seconds, microseconds
      clock = integer(tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
    end
    redis.call('XADD', log, 'MAXLEN', '~', log_maxlen, log_time .. '-' .. log_seq,
               LOG_ROWS, '[' .. table.concat(log_rows, ',') .. ']',
               LOG_DIFFS, '[' .. table.concat(log_diffs, ',') .. ']', LOG_CLOCK, clock)
    log_seq, log_rows, log_diffs = log_seq + 1, {}, {}
  end
  local function update(time, row, diff)
    if time ~= log_time then
      flush()
      log_time, log_seq = time, 0
    elseif #log_rows == LOG_ENTRY_UPDATES then
      flush()
    end
    log_rows[#log_rows + 1] = row
    log_diffs[#log_diffs + 1] = integer(diff)
  end
  local function resume(time, seq)
    log_time, log_seq = time, seq
  end
  local function next_seq()
    flush()
    return log_seq
  end
  return update, flush, resume, next_seq
end

-- Calls a command with `args` after `key`, at most SLICE of them per call (Lua's unpack
-- has a limit, and a part may hold many thousands of rows).
local SLICE = 1000
local function in_slices(command, key, args)
  for first = 1, #args, SLICE do
    redis.call(command, key, unpack(args, first, math.min(first + SLICE - 1, #args)))
  end
end

-- One call's view of the rows' multiplicities, written back in a few commands: a command
-- per update (HINCRBY, then SADD or HDEL and SREM) cost most of an apply, once for the
-- call and once more as it went to the AOF and replicas. read(row) is the multiplicity
-- (0: absent), read from Redis once per call; prefetch(rows) reads many in one HMGET;
-- write(row, new, index_keys) records one; flush() writes every change: contents, and
-- the index sets of the rows that came or left, then starts afresh. What takes rows from
-- the contents or the index sets in Redis (a delete's candidates) must flush first; a
-- scan that may return a row this call changed reads it through read().
local function open_contents(contents, indexed, index_prefix)
  local values, before, index_keys_of = {}, {}, {}
  local m = {}

  function m.read(row)
    local value = values[row]
    if value == nil then
      value = tonumber(redis.call('HGET', contents, row) or '0')
      values[row], before[row] = value, value
    end
    return value
  end

  function m.prefetch(rows)
    local missing = {}
    for _, row in ipairs(rows) do
      if values[row] == nil then missing[#missing + 1] = row end
    end
    for first = 1, #missing, SLICE do
      local last = math.min(first + SLICE - 1, #missing)
      local found = redis.call('HMGET', contents, unpack(missing, first, last))
      for i = first, last do
        local value = tonumber(found[i - first + 1] or '0')
        values[missing[i]], before[missing[i]] = value, value
      end
    end
  end

  function m.write(row, new, index_keys)
    values[row] = new
    if index_keys then index_keys_of[row] = index_keys end
  end

  function m.flush()
    local set, gone, came_to, left_from = {}, {}, {}, {}
    local function note(sets, row)
      for _, key in ipairs(index_keys_of[row] or row_index_keys(indexed, index_prefix, row)) do
        local rows = sets[key]
        if not rows then rows = {}; sets[key] = rows end
        rows[#rows + 1] = row
      end
    end
    for row, value in pairs(values) do
      local old = before[row]
      if value ~= old then
        if value == 0 then
          gone[#gone + 1] = row
        else
          set[#set + 1] = row
          set[#set + 1] = integer(value)
        end
        if old == 0 then note(came_to, row) elseif value == 0 then note(left_from, row) end
      end
    end
    in_slices('HSET', contents, set)  -- SLICE is even: a slice never splits a pair
    in_slices('HDEL', contents, gone)
    for key, rows in pairs(came_to) do in_slices('SADD', key, rows) end
    for key, rows in pairs(left_from) do in_slices('SREM', key, rows) end
    values, before, index_keys_of = {}, {}, {}
  end

  return m
end

-- Temporal validity: the ledger holds every pending retraction; the schedule only those
-- before the expiration (all of them when there is none).
local function open_validity(k)
  local validity, schedule = k.validity, k.schedule
  local expiration_now = tonumber(redis.call('GET', k.expiration) or '')
  -- Most collections have no temporal validity: then a delete need not look rows up in it.
  -- An append earlier in the same call may start the ledger (add sets it).
  local any_validity = redis.call('EXISTS', validity) == 1
  local v = {}

  function v.ledger(row)
    local raw = redis.call('HGET', validity, row)
    return raw and cjson.decode(raw) or {}
  end

  -- Written by hand, not with cjson.encode: cjson writes numbers with 14 significant
  -- digits, and the domain's integers have up to 16.
  function v.save_ledger(row, entry)
    local parts = {}
    for key, total in pairs(entry) do
      parts[#parts + 1] = '"' .. key .. '":' .. integer(total)
    end
    if #parts == 0 then
      redis.call('HDEL', validity, row)
    else
      redis.call('HSET', validity, row, '{' .. table.concat(parts, ',') .. '}')
    end
  end

  function v.add(valid_until, row, diff)
    any_validity = true
    local entry, key = v.ledger(row), integer(valid_until)
    local total = (entry[key] or 0) + diff
    local member = key .. '|' .. row
    if total == 0 then
      entry[key] = nil
      redis.call('ZREM', schedule, member)
    else
      entry[key] = total
      if not expiration_now or valid_until < expiration_now then
        redis.call('ZADD', schedule, key, member)
      end
    end
    v.save_ledger(row, entry)
  end

  function v.drop(row)
    if not any_validity then return end
    local raw = redis.call('HGET', validity, row)
    if not raw then return end
    for key, _ in pairs(cjson.decode(raw)) do redis.call('ZREM', schedule, key .. '|' .. row) end
    redis.call('HDEL', validity, row)
  end

  return v
end

-- Adds the counts to the stats hash; the reply lists every counter, in COUNTERS order.
local function record_counts(stats, counts)
  local reply = {}
  for _, name in ipairs(COUNTERS) do
    local value = counts[name]
    if value > 0 then redis.call('HINCRBY', stats, name, value) end
    reply[#reply + 1] = name
    reply[#reply + 1] = value
  end
  return reply
end

-- The delete in progress at `pending` (keys.py): a predicate telling whether it retracts a
-- row (JSON), and the time it retracts at; nil when there is none. A reader leaves those
-- rows out and reads at that time: the delete is whole as far as it can see.
local function pending_delete(pending, index_prefix)
  local state = redis.call('HMGET', pending, 'query', 'ic', 'time')
  if not state[1] then return nil end
  local query, indexed = cjson.decode(state[1]), cjson.decode(state[2])
  local in_sets = nil
  if query.x then
    in_sets = {}
    for _, key in ipairs(query.x) do in_sets[index_prefix .. key] = true end
  end
  local function retracts(row)
    if in_sets then
      -- A row is in the index sets that row_index_keys derives from it, and only in them.
      local found = false
      for _, key in ipairs(row_index_keys(indexed, index_prefix, row)) do
        if in_sets[key] then found = true; break end
      end
      if not found then return false end
    end
    return query.f == nil or matches(query.f, cjson.decode(row))
  end
  return retracts, tonumber(state[3])
end

local function open_collection(keys, args)
  local k = {}
  for i, name in ipairs(COLLECTION_KEYS) do k[name] = keys[i] end
  local contents, fences, time_key, expiries = k.contents, k.fences, k.time, k.expiries
  -- Most collections have no row TTL: then a row that leaves need not be looked up there.
  local any_expiry = redis.call('EXISTS', expiries) == 1
  local index_prefix = args[1]
  local payload = cjson.decode(args[3])
  local indexed = payload.ic
  local log_update, flush_log, resume_log, next_log_seq = open_log(k.log, args[2])
  -- Known when stored, or when there are no rows; then kept up to date by add, and
  -- written back by finish when raised.
  local stored_bound = tonumber(redis.call('GET', k.bound) or '')
  local bound = stored_bound or (redis.call('EXISTS', contents) == 0 and 0 or nil)
  local counts = {}
  for _, name in ipairs(COUNTERS) do counts[name] = 0 end
  local rows = open_contents(contents, indexed, index_prefix)
  local c = {keys = k, index_prefix = index_prefix, payload = payload, argument = args[4],
             counts = counts, validity = open_validity(k), resume_log = resume_log,
             next_log_seq = next_log_seq, rows = rows}

  -- A delete in progress (keys.py pending) holds the collection: every write finishes it
  -- first, so that nothing lands between its steps.
  function c.held()
    return redis.call('EXISTS', k.pending) == 1
  end

  function c.next_time()
    counts.steps = counts.steps + 1
    return redis.call('INCR', time_key)
  end

  -- One update of a row's multiplicity: contents, index sets, TTL entry, change log, and
  -- the count of retractions that leave a row negative. index_keys: the row's index keys
  -- when the caller has them (see shared_index_keys), else derived from the row.
  function c.add(time, row, diff, index_keys)
    local new = rows.read(row) + diff
    rows.write(row, new, index_keys)
    if bound and (new > bound or -new > bound) then bound = math.abs(new) end
    -- Now, not at flush: an expire_at later in this call may give the row a new entry.
    if new == 0 and any_expiry then redis.call('ZREM', expiries, row) end
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

  -- Row TTL: a row in the collection now expires at `at` (ms); its one entry is replaced.
  function c.expire_at(row, at)
    if rows.read(row) ~= 0 then
      redis.call('ZADD', expiries, integer(at), row)
      any_expiry = true
    end
  end

  -- An append without a TTL named the row: it no longer expires.
  function c.expire_never(row)
    if any_expiry then redis.call('ZREM', expiries, row) end
  end

  -- Whether no row can leave the numeric domain by `total` more of |multiplicity|: then
  -- an apply need not read each row's multiplicity before it writes.
  function c.within_bound(total)
    return bound ~= nil and bound + total <= INT_LIMIT
  end

  -- Ends the call: writes the rows' changes, what the log buffer holds, the bound if
  -- raised, and the counts; the reply of the call.
  function c.finish()
    rows.flush()
    flush_log()
    if bound and bound ~= stored_bound then redis.call('SET', k.bound, integer(bound)) end
    return record_counts(k.stats, counts)
  end

  return c
end
