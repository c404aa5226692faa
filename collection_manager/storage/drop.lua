-- Deletes one collection's keys by name, never by pattern: the index sets of its current
-- rows, derived by index_keys() exactly as add() derives them (a set exists only while a
-- row of its value is in contents), then the declared keys. Returns how many keys went.
-- One call, so no write of a racing apply lands between reading the rows and deleting.

local doomed = {}
for _, row in ipairs(redis.call('HKEYS', contents)) do
  for _, key in ipairs(index_keys(row)) do doomed[key] = true end
end
local deleted = 0
for key in pairs(doomed) do deleted = deleted + redis.call('DEL', key) end
for _, key in ipairs(KEYS) do deleted = deleted + redis.call('DEL', key) end
return deleted
