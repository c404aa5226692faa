-- A filtered snapshot at one time: the rows matching a filter with their multiplicities,
-- and the time they are consistent with (scripts run without interleaving, so never
-- half a request).
-- KEYS: 1 contents, 2 time.  ARGV: 1 index key prefix, 2 JSON {x = index keys?, f = filter?}
local query = cjson.decode(ARGV[2])
local reply = {redis.call('GET', KEYS[2]) or '0'}
for _, row in ipairs(candidates(KEYS[1], ARGV[1], query.x)) do
  if query.f == nil or matches(query.f, cjson.decode(row)) then
    local multiplicity = redis.call('HGET', KEYS[1], row)
    if multiplicity then
      reply[#reply + 1] = row
      reply[#reply + 1] = multiplicity
    end
  end
end
return reply
