-- Records one partition's handled dead letters, atomically and at most once.
--
-- KEYS: 1 done (hash topic:partition -> highest handled offset), 2 unpublished (hash
--       topic:partition:offset -> JSON), 3 recent (list of the newest unpublished fields),
--       4 counts (hash: published, unpublished)
-- ARGV: 1 topic:partition, 2 the highest offset handled, 3 how many were published,
--       4 how many recent fields to keep, then pairs (field, JSON) of unpublished ones
-- Returns 1 when recorded, 0 when the mark was already at or beyond ARGV[2] (a replay, or
-- another applier of the same partition got there first): nothing is written then.
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if tonumber(ARGV[2]) <= done then
  return 0
end
local unpublished = 0
for i = 5, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('LPUSH', KEYS[3], ARGV[i])
  unpublished = unpublished + 1
end
if unpublished > 0 then
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
  redis.call('HINCRBY', KEYS[4], 'unpublished', unpublished)
end
if tonumber(ARGV[3]) > 0 then
  redis.call('HINCRBY', KEYS[4], 'published', ARGV[3])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
