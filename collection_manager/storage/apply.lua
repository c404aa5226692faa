-- Applies one chunk of planned operations (see storage/ops.py) to one collection,
-- atomically (Redis runs a script without interleaving other commands). Operations at or
-- below the applied-offset watermark of their (topic, partition) are skipped, so replaying
-- a chunk is a no-op.  ARGV[4]: the watermark field "topic:partition"; ARGV[5...]: one
-- argument per append part (its index is the part's a): its rows joined by newlines, in
-- the order of the part's diffs d.

local watermark_field = ARGV[4]

local function is_fenced(replica, epoch)
  local dead = redis.call('HGET', fences, replica)
  return dead and tonumber(dead) >= epoch
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
        drop_validity(row)
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
      local rows, from = ARGV[part.a], 1
      for _, diff in ipairs(part.d) do
        local to = string.find(rows, '\n', from, true) or (#rows + 1)
        local row = string.sub(rows, from, to - 1)
        from = to + 1
        add(time, row, diff)
        if part.v then add_validity(part.v, row, diff) end
      end
      counts.updates = counts.updates + #part.d
    end
    counts.requests = counts.requests + part.n
  end
end

local watermark = tonumber(redis.call('HGET', applied, watermark_field) or '-1')
-- Checked before any write: a script error does not roll back what it already wrote.
for _, op in ipairs(payload.ops) do
  if op.s <= watermark and op.o > watermark then
    -- Merged requests straddle the watermark: the caller must drop applied ones first.
    return redis.error_reply('request group straddles the applied offset ' .. watermark)
  end
end
for _, op in ipairs(payload.ops) do
  if op.o <= watermark then
    counts.replays_skipped = counts.replays_skipped + 1
  elseif op.k == 'f' then
    fence(op.fr, op.fe)
    watermark = op.o
  elseif op.k == 'a' then
    append(next_time(), op)
    watermark = op.o
  else
    delete(next_time(), op)
    counts.requests = counts.requests + 1
    watermark = op.o
  end
end
redis.call('HSET', applied, watermark_field, watermark)
return finish()
