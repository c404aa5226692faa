-- Part 1 of the library (see library.py): filters, shared by cm_apply's deletes and cm_read.
-- Pure functions of their arguments; defines matches(filter, row) and
-- candidates(contents, index_prefix, index_keys).
-- cjson exists while a function runs, not while the library loads: looked up at call time.

local matches

-- -1, 0 or 1 as a sorts before, equal to or after b. Strings compare byte by byte, which
-- for UTF-8 is code point order, as in Python: Lua's own < on strings follows the C
-- library's collation of Redis's locale.
local function order(a, b)
  if a == b then return 0 end
  if type(a) ~= 'string' then return a < b and -1 or 1 end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y and -1 or 1 end
  end
  return #a < #b and -1 or 1
end

local function all_match(terms, row, from)
  for i = from, #terms do if not matches(terms[i], row) then return false end end
  return true
end
local function any_match(terms, row, from)
  for i = from, #terms do if matches(terms[i], row) then return true end end
  return false
end

-- Filters: {op, ...}: and/or {op, f1, f2, ...}; not {op, f}; is_null {op, col};
-- comparisons {op, col, literal}; in {op, col, {literals}}; prefix {op, col, string}.
-- A comparison with a null column value is false (only is_null sees nulls).
matches = function(f, row)
  local op = f[1]
  if op == 'and' then return all_match(f, row, 2) end
  if op == 'or' then return any_match(f, row, 2) end
  if op == 'not' then return not matches(f[2], row) end
  local v, null = row[f[2] + 1], cjson.null
  if op == 'is_null' then return v == null end
  if v == null then return false end
  local lit = f[3]
  if op == 'eq' then return v == lit end
  if op == 'ne' then return v ~= lit end
  if op == 'lt' then return order(v, lit) < 0 end
  if op == 'le' then return order(v, lit) <= 0 end
  if op == 'gt' then return order(v, lit) > 0 end
  if op == 'ge' then return order(v, lit) >= 0 end
  if op == 'prefix' then return string.sub(v, 1, #lit) == lit end
  if op == 'in' then
    -- A set, built on first use in this call: constant time per row however long the list
    -- (Lua table keys keep true apart from 1, and 1 equal to 1.0, as the Python model does).
    if f.set == nil then
      f.set = {}
      for _, candidate in ipairs(lit) do f.set[candidate] = true end
    end
    return f.set[v] == true
  end
  error('unknown filter op ' .. tostring(op))  -- filters are validated before they get here
end

-- The rows a filter must be checked on: those of the given index sets, or all of them.
-- The index sets' keys are derived from index_prefix, not declared: they share the
-- collection's slot, and its declared migration guard keeps calls off a migrating slot.
local function candidates(contents, index_prefix, index_keys)
  if index_keys == nil then return redis.call('HKEYS', contents) end
  local rows, seen = {}, {}
  for _, key in ipairs(index_keys) do
    for _, row in ipairs(redis.call('SMEMBERS', index_prefix .. key)) do
      if not seen[row] then seen[row] = true; rows[#rows + 1] = row end
    end
  end
  return rows
end
