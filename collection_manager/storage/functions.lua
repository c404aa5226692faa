-- Part 3 of the library (see library.py): the functions Python calls with FCALL, and their
-- registration. Uses matches and candidates (filter.lua), open_collection
-- (collection.lua) and the generated VERSION and PREFIX (each function is registered as
-- PREFIX .. its name, so that libraries of several versions live side by side in Redis).
--
-- cm_apply, cm_continue, cm_due and cm_horizon take a collection's keys and arguments as
-- open_collection describes; cm_read its own (see there). The writing ones reply {'held'}
-- and write nothing while a delete is in progress: the caller finishes it with
-- cm_continue and calls again. Redis runs a function without
-- interleaving other commands, so each call is atomic; an error does not roll back what a
-- call already wrote.

local function is_fenced(fences, replica, epoch)
  local dead = redis.call('HGET', fences, replica)
  return dead and tonumber(dead) >= epoch
end

local function fence(fences, replica, epoch)
  local dead = redis.call('HGET', fences, replica)
  if not dead or epoch > tonumber(dead) then
    redis.call('HSET', fences, replica, integer(epoch))
  end
end

-- Every multiplicity the append ops of a chunk would leave, checked before the chunk writes
-- anything: the index (in ops) of the first op that would take a row out of the domain,
-- with the row and the value, or nil. A delete ends a chunk (see storage/ops.py), so no
-- fence changes within one before an append.
local function first_overflow(c, args, ops, watermark)
  local total = 0  -- how far the chunk could move a row at most; rounding only raises it
  for _, op in ipairs(ops) do
    if op.o > watermark and op.k == 'a' then
      for _, part in ipairs(op.p) do
        for _, diff in ipairs(part.d) do total = total + math.abs(diff) end
      end
    end
  end
  if c.within_bound(total) then return nil end  -- the common case: no row is read
  local pending = {}
  for i, op in ipairs(ops) do
    if op.o > watermark and op.k == 'a' then
      for _, part in ipairs(op.p) do
        if not is_fenced(c.keys.fences, part.r, part.e) then
          local rows, from = args[part.a], 1
          for _, diff in ipairs(part.d) do
            local to = string.find(rows, '\n', from, true) or (#rows + 1)
            local row = string.sub(rows, from, to - 1)
            from = to + 1
            local new = (pending[row] or c.rows.read(row)) + diff
            if new > INT_LIMIT or new < -INT_LIMIT then return i, row, new end
            pending[row] = new
          end
        end
      end
    end
  end
  return nil
end

-- An append refused whole: recorded (once, as the watermark passes it) for the consumer to
-- dead-letter, and counted; nothing of it is written and no time passes.
local function refuse(c, watermark_field, op)
  redis.call('HSET', c.keys.refused, watermark_field .. ':' .. integer(op.s), op.why)
  c.counts.refused = c.counts.refused + 1
end

-- How many rows a delete may have to look at: the sizes of its index sets, or of the
-- collection when it scans.
local function delete_size(c, query)
  if query.x == nil then return redis.call('HLEN', c.keys.contents) end
  local size = 0
  for _, key in ipairs(query.x) do size = size + redis.call('SCARD', c.index_prefix .. key) end
  return size
end

-- Retracts a candidate row of a delete, with its full multiplicity, if the delete's
-- residual filter matches it and it is still there (a scan may return a row twice).
local function retract_matching(c, time, query, row)
  if query.f == nil or matches(query.f, cjson.decode(row)) then
    local multiplicity = c.rows.read(row)
    if multiplicity ~= 0 then
      c.add(time, row, -multiplicity)
      c.validity.drop(row)
      c.counts.retractions = c.counts.retractions + 1
    end
  end
end

-- This server's run id, new at each start. A SCAN cursor means something only to the
-- server that returned it: a restarted server, or the node a slot moved to, hashes with
-- another seed, so the cursor points at other rows there.
local function server_run()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
end

-- A delete whose candidates fit in one step (payload ds) is done here; a larger one is
-- recorded as the collection's delete in progress, at the next time, which becomes
-- readable when cm_continue has done its last step (docs/concepts/deletes.md). Its query is
-- stored as Python wrote it: cjson would rewrite its numbers with 14 significant digits.
-- A fenced delete of an epoch this unit fences already retracts nothing (and takes a
-- time): the removal of that incarnation was applied here before, and the fuse drops its
-- late appends since, so its replica's rows here are a newer incarnation's. A late
-- duplicate of a removal (another controller's, delivered after the replica was added
-- again and appended) must not retract them (docs/concepts/epochs-and-fences.md).
local function delete(c, args, op)
  c.rows.flush()  -- its candidates come from Redis: the appends before it must be there
  local query = cjson.decode(args[op.q])
  local time
  if op.fr and is_fenced(c.keys.fences, op.fr, op.fe) then
    time = c.next_time()
  elseif delete_size(c, query) <= c.payload.ds then
    time = c.next_time()
    for _, row in ipairs(candidates(c.keys.contents, c.index_prefix, query.x)) do
      retract_matching(c, time, query, row)
    end
  else
    c.counts.steps = c.counts.steps + 1
    time = tonumber(redis.call('GET', c.keys.time) or '0') + 1
    redis.call('HSET', c.keys.pending, 'query', args[op.q], 'ic', cjson.encode(c.payload.ic),
               'time', integer(time), 'key', 1, 'cursor', '0', 'seq', 0, 'run', server_run())
  end
  if op.fr then fence(c.keys.fences, op.fr, op.fe) end
  return time
end

-- The parts of grouped requests (op.g: "<group>|<parts>" each) that an op applied at
-- `time`, recorded in the same call, so readers know which groups this bucket holds at
-- which time and can see each group whole or not at all (core/cut.py).
local function record_parts(c, op, time)
  if not op.g then return end
  for _, part in ipairs(op.g) do
    redis.call('ZADD', c.keys.parts, time, part .. '|' .. integer(c.payload.now))
  end
end

-- The full index keys of a part whose rows all share them (x: "<column>:<value>", as
-- row_index_keys derives them; see ops.py shared_index_keys), or nil: derive per row.
local function shared_keys(c, part)
  if not part.x then return nil end
  local keys = {}
  for i, key in ipairs(part.x) do keys[i] = c.index_prefix .. key end
  return keys
end

-- Appends merged between deletes: one time for all; the fuse decides per part. A part's
-- rows are the argument args[part.a], joined by newlines, in the order of its diffs d. A
-- part names rows with a zero diff too: they are not written, but every row a part with a
-- TTL (t, ms) names that is in the collection expires at now + t, and every row a part
-- without one names expires no more (docs/concepts/ttl-and-expiration.md).
local function append(c, args, time, op)
  local fences, add, add_validity, counts = c.keys.fences, c.add, c.validity.add, c.counts
  for _, part in ipairs(op.p) do
    if is_fenced(fences, part.r, part.e) then
      counts.fused_appends = counts.fused_appends + part.n
    else
      local rows, text, from = {}, args[part.a], 1
      for i = 1, #part.d do
        local to = string.find(text, '\n', from, true) or (#text + 1)
        rows[i] = string.sub(text, from, to - 1)
        from = to + 1
      end
      c.rows.prefetch(rows)
      local expires_at = part.t and c.payload.now + part.t
      local index_keys = shared_keys(c, part)
      for i, diff in ipairs(part.d) do
        local row = rows[i]
        if diff ~= 0 then
          add(time, row, diff, index_keys)
          if part.v then add_validity(part.v, row, diff) end
          counts.updates = counts.updates + 1
        end
        if expires_at then c.expire_at(row, expires_at) else c.expire_never(row) end
      end
    end
    counts.requests = counts.requests + part.n
  end
end

-- Applies one chunk of planned operations (see storage/ops.py) to one collection. Those
-- at or below the applied-offset watermark of their (topic, partition) are skipped, so
-- applying a chunk again is a no-op. Own argument: the watermark field "topic:partition".
local function cm_apply(keys, args)
  local c = open_collection(keys, args)
  if c.held() then return {'held'} end  -- the caller finishes the delete and calls again
  local applied, watermark_field, ops = c.keys.applied, c.argument, c.payload.ops
  local watermark = tonumber(redis.call('HGET', applied, watermark_field) or '-1')
  -- Checked before any write: an error does not roll back what the call already wrote.
  for i, op in ipairs(ops) do
    if op.s <= watermark and op.o > watermark then
      -- Merged requests straddle the watermark: the caller must drop applied ones first.
      return redis.error_reply('request group straddles the applied offset ' .. watermark)
    end
    if op.k == 'd' and i < #ops then
      -- It may leave a delete in progress, which nothing may overtake.
      return redis.error_reply('a delete must end its chunk')
    end
  end
  local refused, row, value = first_overflow(c, args, ops, watermark)
  if refused then
    -- Nothing written: the caller splits the op into its requests, or refuses the one.
    return {'refused', refused, row, integer(value)}
  end
  local counts = c.counts
  for _, op in ipairs(ops) do
    if op.o <= watermark then
      counts.replays_skipped = counts.replays_skipped + 1
    elseif op.k == 'x' then
      refuse(c, watermark_field, op)
      watermark = op.o
    elseif op.k == 'a' then
      local time = c.next_time()
      append(c, args, time, op)
      record_parts(c, op, time)
      watermark = op.o
    else
      record_parts(c, op, delete(c, args, op))
      counts.requests = counts.requests + 1
      watermark = op.o
    end
  end
  redis.call('HSET', applied, watermark_field, integer(watermark))
  return c.finish()
end

-- Applies, at one new time, what is due, up to DUE_STEP_ROWS of it: first the rows whose
-- TTL expired at the payload's now (ms; 0 when the consumer may not expire rows yet), each
-- retracted whole with its pending valid_until retractions, then the retractions scheduled
-- at or before the own argument (ms). Each removes its entry in the same step, so calling
-- it again is a no-op. Replies 'more' (it stopped at the bound: call again, which applies
-- the rest at the next time) or 'done', then the counters as cm_apply does.
local function cm_due(keys, args)
  local c = open_collection(keys, args)
  if c.held() then return {'held'} end
  local k, validity, counts = c.keys, c.validity, c.counts
  local expired = redis.call('ZRANGEBYSCORE', k.expiries, '-inf', integer(c.payload.now),
                             'LIMIT', 0, DUE_STEP_ROWS)
  -- Read before the expiries drop their rows' members: the loop below skips those.
  local room, due = DUE_STEP_ROWS - #expired, {}
  if room > 0 then
    due = redis.call('ZRANGEBYSCORE', k.schedule, '-inf', c.argument, 'LIMIT', 0, room)
  end
  local state = (room == 0 or #due == room) and 'more' or 'done'
  local function reply()
    local counters = c.finish()
    table.insert(counters, 1, state)
    return counters
  end
  if #expired == 0 and #due == 0 then return reply() end
  local time = c.next_time()
  for _, row in ipairs(expired) do
    local multiplicity = c.rows.read(row)
    if multiplicity ~= 0 then c.add(time, row, -multiplicity) end  -- leaves expiries at zero
    redis.call('ZREM', k.expiries, row)
    validity.drop(row)
    counts.expirations = counts.expirations + 1
  end
  for _, member in ipairs(due) do
    local bar = string.find(member, '|', 1, true)
    local key, row = string.sub(member, 1, bar - 1), string.sub(member, bar + 1)
    local entry = validity.ledger(row)
    local diff = entry[key]
    if diff then
      local now = c.rows.read(row)
      -- A retraction that would leave the domain is dropped, and counted as refused
      -- (checked before its write: the row is untouched).
      if now - diff > INT_LIMIT or now - diff < -INT_LIMIT then
        counts.refused = counts.refused + 1
      else
        c.add(time, row, -diff)
        counts.scheduled_retractions = counts.scheduled_retractions + 1
      end
      entry[key] = nil
      validity.save_ledger(row, entry)
    end
    redis.call('ZREM', c.keys.schedule, member)
  end
  return reply()
end

-- Sets the expiration to the own argument (ms; empty: none) and rebuilds the schedule for
-- it: every ledger entry before the expiration is scheduled, none at or after it. Replies
-- with the schedule's size.
local function cm_horizon(keys, args)
  local c = open_collection(keys, args)
  if c.held() then return {'held'} end
  local k = c.keys
  local expiration = tonumber(args[4])
  if expiration then
    redis.call('SET', k.expiration, integer(expiration))
    redis.call('ZREMRANGEBYSCORE', k.schedule, integer(expiration), '+inf')
  else
    redis.call('DEL', k.expiration)
  end
  local rows = redis.call('HGETALL', k.validity)
  for i = 1, #rows, 2 do
    for key, _ in pairs(cjson.decode(rows[i + 1])) do
      local valid_until = tonumber(key)
      if not expiration or valid_until < expiration then
        redis.call('ZADD', k.schedule, key, key .. '|' .. rows[i])
      end
    end
  end
  return redis.call('ZCARD', k.schedule)
end

-- One step of the collection's delete in progress (see delete): retracts the matching
-- rows among about `own argument` candidates, from where the last step stopped (a
-- cursor of SSCAN over each index set, or HSCAN over the contents), at the delete's time.
-- The last step makes that time readable and ends the delete. Rows the delete retracted
-- have left contents and index sets (by the end of their step; within it, the call's view
-- of the rows reads them as gone), and nothing else writes meanwhile, so a row a cursor
-- returns again is not retracted twice and none present throughout is missed; on another
-- server than the last step's (see server_run) the scan starts again.
-- Replies 'more' or 'done', then the counters as cm_apply does.
local function cm_continue(keys, args)
  local c = open_collection(keys, args)
  local k = c.keys
  local state = redis.call('HMGET', k.pending, 'query', 'time', 'key', 'cursor', 'seq', 'run')
  if not state[1] then
    local reply = c.finish()
    table.insert(reply, 1, 'done')
    return reply
  end
  local query, time = cjson.decode(state[1]), tonumber(state[2])
  local key, cursor, run = tonumber(state[3]), state[4], server_run()
  if state[6] ~= run then
    -- The cursor came from another server: scan this set (or the contents) again from
    -- its start. The rows retracted so far are gone from it, so none is retracted twice,
    -- and the sets before it were scanned whole.
    cursor = '0'
  end
  c.resume_log(time, tonumber(state[5]))
  local budget, done = tonumber(c.argument), false
  while budget > 0 and not done do
    local found = {}
    if query.x then
      local reply = redis.call('SSCAN', c.index_prefix .. query.x[key], cursor, 'COUNT', budget)
      cursor, found = reply[1], reply[2]
    else
      local reply = redis.call('HSCAN', k.contents, cursor, 'COUNT', budget)
      cursor = reply[1]
      for i = 1, #reply[2], 2 do found[#found + 1] = reply[2][i] end
    end
    for _, row in ipairs(found) do retract_matching(c, time, query, row) end
    budget = budget - #found - 1  -- a scan call costs even when it finds nothing
    if cursor == '0' then
      if query.x and key < #query.x then key, cursor = key + 1, '0' else done = true end
    end
  end
  local seq = c.next_log_seq()
  if done then
    redis.call('SET', k.time, integer(time))
    redis.call('DEL', k.pending)
  else
    redis.call('HSET', k.pending, 'key', integer(key), 'cursor', cursor, 'seq', integer(seq),
               'run', run)
  end
  local reply = c.finish()
  table.insert(reply, 1, done and 'done' or 'more')
  return reply
end

-- The time a reader sees: a delete's in progress (pending_time, whole to readers), else
-- the latest readable one.
local function read_time(time_key, pending_time)
  return pending_time and integer(pending_time) or redis.call('GET', time_key) or '0'
end

-- Whether a reader of `query` sees `row`: it matches the filter, and no delete in
-- progress (`retracted`, from pending_delete) retracts it.
local function seen_by(query, retracted, row)
  return (query.f == nil or matches(query.f, cjson.decode(row)))
    and not (retracted and retracted(row))
end

-- A filtered snapshot at one time: the rows matching a filter with their multiplicities,
-- after the time they are consistent with (never half a request). While a delete is in
-- progress, that is the delete's time, and the rows it will retract are left out.
-- keys: 1 contents, 2 time, 3 pending.
-- args: 1 index key prefix, 2 JSON {x = index keys?, f = filter?}
local function cm_read(keys, args)
  local contents, query = keys[1], cjson.decode(args[2])
  local retracted, pending_time = pending_delete(keys[3], args[1])
  local reply = {read_time(keys[2], pending_time)}
  for _, row in ipairs(candidates(contents, args[1], query.x)) do
    if seen_by(query, retracted, row) then
      local multiplicity = redis.call('HGET', contents, row)
      if multiplicity then
        reply[#reply + 1] = row
        reply[#reply + 1] = multiplicity
      end
    end
  end
  return reply
end

-- One step of a stepped read (core/stepped_read.py, storage/step_reads.py): the candidates a scan finds from
-- where it stands, at most about `budget` of them, that match the filter (and, split in n
-- parts, fall in part `slot`), with their multiplicities at the time the step answers at.
-- Steps of one read answer at different times; the reader brings them to one time with the
-- change log. Pending deletes are seen as cm_read sees them. A cursor means something only
-- to the server that gave it (server_run): the reply names the server, and a reader that
-- meets another one starts again.
-- keys: 1 contents, 2 time, 3 pending.
-- args: 1 index key prefix, 2 JSON {x = index keys?, f = filter?}, 3 index key position
-- (1-based), 4 cursor, 5 budget, 6 parts n, 7 part slot (0-based).
-- Replies {time, run, next position (0: the scan is done), next cursor, probe, row,
-- multiplicity, ...}. The probe is the cursor a scan of one element from 0 of the key at
-- the position answers, in this same call: its bit length tells how small the key's table
-- may be now, so the reader knows what this step may return again after a shrink
-- (core/scan_order.py); '0' when the step starts at cursor 0.
local function cm_scan(keys, args)
  local contents, query = keys[1], cjson.decode(args[2])
  local position, cursor, budget = tonumber(args[3]), args[4], tonumber(args[5])
  local parts, slot = tonumber(args[6]), tonumber(args[7])
  local retracted, pending_time = pending_delete(keys[3], args[1])
  local probe = '0'
  if cursor ~= '0' then
    if query.x then
      probe = redis.call('SSCAN', args[1] .. query.x[position], '0', 'COUNT', 1)[1]
    else
      probe = redis.call('HSCAN', contents, '0', 'COUNT', 1)[1]
    end
  end
  local reply = {read_time(keys[2], pending_time), server_run(), 0, '0', probe}
  -- found: rows, and for a scan of contents their multiplicities (an index set has none)
  local found, multiplicities, done = {}, {}, false
  while budget > 0 and not done do
    local size = #found
    if query.x then
      local scanned = redis.call('SSCAN', args[1] .. query.x[position], cursor, 'COUNT', budget)
      cursor = scanned[1]
      for _, row in ipairs(scanned[2]) do found[#found + 1] = row end
    else
      local scanned = redis.call('HSCAN', contents, cursor, 'COUNT', budget)
      cursor = scanned[1]
      for i = 1, #scanned[2], 2 do
        found[#found + 1] = scanned[2][i]
        multiplicities[#found] = scanned[2][i + 1]
      end
    end
    budget = budget - (#found - size) - 1  -- a scan call costs even when it finds nothing
    if cursor == '0' then
      if query.x and position < #query.x then position = position + 1 else done = true end
    end
  end
  reply[3], reply[4] = done and 0 or integer(position), cursor
  for i, row in ipairs(found) do
    if (parts == 1 or tonumber(string.sub(redis.sha1hex(row), 1, 8), 16) % parts == slot)
        and seen_by(query, retracted, row) then
      local multiplicity = multiplicities[i] or redis.call('HGET', contents, row)
      if multiplicity then
        reply[#reply + 1] = row
        reply[#reply + 1] = multiplicity
      end
    end
  end
  return reply
end

-- The multiplicities of given rows (0 for absent ones, and for those a pending delete
-- retracts), and the time they are at: a stepped read's second look at rows that changed
-- while it scanned. keys: 1 contents, 2 time, 3 pending. args: 1 index key prefix, 2... rows.
-- Replies {time, multiplicity, ...}.
local function cm_counts(keys, args)
  local retracted, pending_time = pending_delete(keys[3], args[1])
  local reply = {read_time(keys[2], pending_time)}
  for i = 2, #args do
    local row = args[i]
    local multiplicity = '0'
    if not (retracted and retracted(row)) then
      multiplicity = redis.call('HGET', keys[1], row) or '0'
    end
    reply[#reply + 1] = multiplicity
  end
  return reply
end

-- A bucket's view for a read across buckets (core/cut.py): the time readers see now (the
-- latest readable one, or while a delete is in progress its time), the latest readable
-- time (the change log is whole up to it), and the grouped parts applied after the settled
-- time `floor`. keys: 1 time, 2 pending, 3 parts. args: 1 floor, 2 the most parts to
-- return. Replies {visible, readable, member, time, member, time, ...}; more parts than
-- asked for are never returned (the caller refuses to read then).
local function cm_cut(keys, args)
  local readable = redis.call('GET', keys[1]) or '0'
  local visible = redis.call('HGET', keys[2], 'time') or readable
  local reply = {tonumber(visible), tonumber(readable)}
  local parts = redis.call('ZRANGEBYSCORE', keys[3], '(' .. args[1], '+inf', 'WITHSCORES',
                           'LIMIT', 0, tonumber(args[2]))
  for _, value in ipairs(parts) do reply[#reply + 1] = value end
  return reply
end

-- Records a settled cut of a bucketed collection (storage/cut.py), unless another settle
-- came first: keys: 1 the cut hash. args: 1 the version the caller read ('' for none),
-- then pairs of field and value (bucket -> time, 'x:<group>' -> 1). Replies 1 when it
-- wrote (and the version moved on by one), 0 when the version had moved meanwhile.
local function cm_settle(keys, args)
  if (redis.call('HGET', keys[1], 'v') or '') ~= args[1] then return 0 end
  for i = 2, #args, 2 do redis.call('HSET', keys[1], args[i], args[i + 1]) end
  redis.call('HINCRBY', keys[1], 'v', 1)
  return 1
end

-- One step of dropping a collection (storage/drop.py), whose definition is gone from the
-- catalog already: up to `budget` of its rows leave its contents and their index sets
-- (derived by row_index_keys as add derives them: a set exists only while a row of its
-- value is in contents); once none is left, every key of the collection goes, by name,
-- never by pattern (UNLINK: Redis frees a large one in the background). A cursor is kept
-- in the drop's state between steps, and starts again on another server (server_run).
-- keys: the collection's keys (FUNCTION_KEYS order, contents first), then the drop's
-- state. args: 1 index key prefix, 2 budget (rows). Replies 'more' or 'done'.
local function cm_drop(keys, args)
  local contents, state = keys[1], keys[#keys]
  local info = redis.call('HMGET', state, 'ic', 'cursor', 'run')
  if not info[1] then return 'done' end  -- another client finished it
  local indexed, cursor, run = cjson.decode(info[1]), info[2] or '0', server_run()
  if info[3] ~= run then cursor = '0' end
  local budget = tonumber(args[2])
  repeat
    local scanned = redis.call('HSCAN', contents, cursor, 'COUNT', budget)
    cursor = scanned[1]
    for i = 1, #scanned[2], 2 do
      local row = scanned[2][i]
      for _, key in ipairs(row_index_keys(indexed, args[1], row)) do
        redis.call('SREM', key, row)
      end
      redis.call('HDEL', contents, row)
    end
    budget = budget - #scanned[2] / 2 - 1  -- a scan call costs even when it finds nothing
  until budget <= 0 or cursor == '0'
  -- A pass is whole when the cursor is back at 0; a row a late writer added is found by
  -- the next pass.
  if cursor == '0' and redis.call('EXISTS', contents) == 0 then
    for _, key in ipairs(keys) do redis.call('UNLINK', key) end
    return 'done'
  end
  redis.call('HSET', state, 'cursor', cursor, 'run', run)
  return 'more'
end

-- The version of this library's source, so that a client can tell whether to replace it.
local function cm_version()
  return VERSION
end

redis.register_function(PREFIX .. 'apply', cm_apply)
redis.register_function(PREFIX .. 'due', cm_due)
redis.register_function(PREFIX .. 'horizon', cm_horizon)
redis.register_function(PREFIX .. 'continue', cm_continue)
redis.register_function(PREFIX .. 'drop', cm_drop)
redis.register_function(PREFIX .. 'settle', cm_settle)
redis.register_function{function_name = PREFIX .. 'read', callback = cm_read, flags = {'no-writes'}}
redis.register_function{function_name = PREFIX .. 'scan', callback = cm_scan, flags = {'no-writes'}}
redis.register_function{function_name = PREFIX .. 'counts', callback = cm_counts, flags = {'no-writes'}}
redis.register_function{function_name = PREFIX .. 'cut', callback = cm_cut, flags = {'no-writes'}}
redis.register_function{function_name = PREFIX .. 'version', callback = cm_version, flags = {'no-writes'}}
