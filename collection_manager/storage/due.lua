-- Applies the scheduled retractions due at ARGV[4] (ms), at one new time. Each removes its
-- ledger entry in the same step, so running it again is a no-op.

local now = tonumber(ARGV[4])
local due = redis.call('ZRANGEBYSCORE', schedule, '-inf', now)
if #due == 0 then return finish() end
local time = next_time()
for _, member in ipairs(due) do
  local bar = string.find(member, '|', 1, true)
  local key, row = string.sub(member, 1, bar - 1), string.sub(member, bar + 1)
  local entry = ledger(row)
  local diff = entry[key]
  if diff then
    add(time, row, -diff)
    entry[key] = nil
    save_ledger(row, entry)
    counts.scheduled_retractions = counts.scheduled_retractions + 1
  end
  redis.call('ZREM', schedule, member)
end
return finish()
