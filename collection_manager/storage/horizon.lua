-- Sets the expiration to ARGV[4] (ms; empty: none) and rebuilds the schedule for it: every
-- ledger entry before the expiration is scheduled, none at or after it.

local expiration = tonumber(ARGV[4])
if expiration then
  redis.call('SET', expiration_key, expiration)
  redis.call('ZREMRANGEBYSCORE', schedule, expiration, '+inf')
else
  redis.call('DEL', expiration_key)
end
local rows = redis.call('HGETALL', validity)
for i = 1, #rows, 2 do
  for key, _ in pairs(cjson.decode(rows[i + 1])) do
    local valid_until = tonumber(key)
    if not expiration or valid_until < expiration then
      redis.call('ZADD', schedule, valid_until, key .. '|' .. rows[i])
    end
  end
end
return redis.call('ZCARD', schedule)
