-- refs_units.lua: units, number formatting and aggregates for refs.lua.
-- Loaded as dofile(...)(fail, json): fail(where, msg) stops the build.
return function(fail, json)
local U = {}

local TIME = { ns = 1e-9, us = 1e-6, ms = 1e-3, s = 1 }
local SHOW = { ns = "ns", us = "µs", ms = "ms", s = "s", x = "×", pct = "%", per_s = "/s", [""] = "" }
local ASK = { ns = "ns", us = "us", ["µs"] = "us", ms = "ms", s = "s", x = "x", ["×"] = "x",
              ["%"] = "pct", pct = "pct", ["/s"] = "per_s", per_s = "per_s", count = "", none = "" }

-- The unit a field is in: its name's suffix (_us, _ms, _s, _per_s, _pct,
-- also before a trailing _before/_after/...), "ratio", or for a summary
-- record's before/after the record's "unit". A summary's other fields that
-- end in _before, _after or _baseline and have no unit of their own
-- (median_p99_before) are in the record's "unit" too.
local function source_unit(rec, field)
  local last = field:match("([^%.]+)$")
  if last == "ratio" then return "x" end
  local function rec_unit()
    local u = ASK[rec.unit]
    if u then return u end
    -- "hits/s", "ops/s": a rate, shown as /s
    if rec.unit:match("^%a+/s$") then return "per_s" end
    if rec.unit == "count" or rec.unit == "" then return "" end
    fail(rec.experiment or "?", "unknown unit \"" .. rec.unit .. "\" in a summary record")
  end
  if (last == "before" or last == "after") and type(rec.unit) == "string" then
    return rec_unit()
  end
  local toks = {}
  for t in last:gmatch("[^_]+") do toks[#toks + 1] = t end
  for i = #toks, 1, -1 do
    local t = toks[i]
    if t == "s" and toks[i - 1] == "per" then return "per_s" end
    if TIME[t] or t == "pct" then return t end
    if t == "seconds" then return "s" end
  end
  local tail = toks[#toks]
  if rec.type == "summary" and type(rec.unit) == "string" and #toks > 1
     and (tail == "before" or tail == "after" or tail == "baseline") then
    return rec_unit()
  end
  return ""
end

local function convert(v, from, to, where, what)
  if to == nil or to == from then return v, from end
  if TIME[from] and TIME[to] then return v * TIME[from] / TIME[to], to end
  fail(where, "unit mismatch: " .. what .. " is " .. (from == "" and "a plain count (no unit)" or "in " .. SHOW[from])
       .. ", asked for " .. (to == "" and "a count" or SHOW[to]))
end

local function group(digits)
  local s = digits
  while true do
    local n
    s, n = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
    if n == 0 then return s end
  end
end

local function fmt_num(v, sig)
  sig = sig or 3
  if v ~= v then return "NaN" end
  local a = math.abs(v)
  if a == math.floor(a) and a < 1e15 then return (v < 0 and "-" or "") .. group(string.format("%d", a)) end
  local s
  if a >= 10 ^ sig then
    s = group(string.format("%.0f", a))
  else
    local decimals = a > 0 and math.max(0, sig - 1 - math.floor(math.log(a, 10))) or 0
    s = string.format("%." .. decimals .. "f", a) -- trailing zeros are significant
    s = group(s:match("^%d+")) .. (s:match("%..*$") or "")
  end
  return (v < 0 and "-" or "") .. s
end

local function with_unit(text, unit)
  if unit == "" then return text end
  if unit == "x" or unit == "pct" or unit == "per_s" then return text .. SHOW[unit] end
  return text .. "\u{a0}" .. SHOW[unit]
end

local function numbers(vals, where, what)
  local out = {}
  for _, v in ipairs(vals) do
    if type(v) == "table" and v ~= json.null then
      for _, x in ipairs(v) do out[#out + 1] = x end
    else
      out[#out + 1] = v
    end
  end
  for _, x in ipairs(out) do
    if type(x) ~= "number" then fail(where, what .. ": '" .. tostring(x) .. "' is not a number") end
  end
  if #out == 0 then fail(where, what .. " is empty") end
  return out
end

local AGG = {
  min = function(t) return math.min(table.unpack(t)) end,
  max = function(t) return math.max(table.unpack(t)) end,
  sum = function(t) local s = 0 for _, x in ipairs(t) do s = s + x end return s end,
  mean = function(t) local s = 0 for _, x in ipairs(t) do s = s + x end return s / #t end,
  count = function(t) return #t end,
  median = function(t)
    local c = { table.unpack(t) }
    table.sort(c)
    local n = #c
    return n % 2 == 1 and c[(n + 1) // 2] or (c[n // 2] + c[n // 2 + 1]) / 2
  end,
}

U.TIME, U.SHOW, U.ASK, U.AGG = TIME, SHOW, ASK, AGG
U.source_unit, U.convert, U.fmt_num, U.with_unit, U.numbers = source_unit, convert, fmt_num, with_unit, numbers
return U
end
