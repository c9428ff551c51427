-- json.lua: a small JSON decoder for the book filter (pandoc 2.x has none).
-- decode(text) returns the value, or nil and a message. null becomes
-- json.null (a sentinel), so a key present with null differs from a key
-- that is absent.

local M = { null = setmetatable({}, { __tostring = function() return "null" end }) }

local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f",
                  n = "\n", r = "\r", t = "\t" }

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then
    return string.char(0xC0 | (cp >> 6), 0x80 | (cp & 0x3F))
  end
  if cp < 0x10000 then
    return string.char(0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))
  end
  return string.char(0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F),
                     0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F))
end

local parse -- forward

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local function parse_string(s, i) -- s:sub(i, i) == '"'
  local out, j = {}, i + 1
  while true do
    local k = s:find('["\\]', j)
    if not k then error("unterminated string at " .. i, 0) end
    out[#out + 1] = s:sub(j, k - 1)
    if s:sub(k, k) == '"' then return table.concat(out), k + 1 end
    local e = s:sub(k + 1, k + 1)
    if e == "u" then
      local hex = s:sub(k + 2, k + 5)
      if not hex:match("^%x%x%x%x$") then error("bad \\u escape at " .. k, 0) end
      local cp, nxt = tonumber(hex, 16), k + 6
      if cp >= 0xD800 and cp < 0xDC00 and s:sub(nxt, nxt + 1) == "\\u" then
        local lo = tonumber(s:sub(nxt + 2, nxt + 5), 16)
        if lo and lo >= 0xDC00 and lo < 0xE000 then
          cp, nxt = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), nxt + 6
        end
      end
      out[#out + 1] = utf8_char(cp)
      j = nxt
    elseif escapes[e] then
      out[#out + 1] = escapes[e]
      j = k + 2
    else
      error("bad escape at " .. k, 0)
    end
  end
end

function parse(s, i)
  i = skip(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    local obj = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return obj, i + 1 end
    while true do
      if s:sub(i, i) ~= '"' then error("expected a key at " .. i, 0) end
      local key
      key, i = parse_string(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then error("expected ':' at " .. i, 0) end
      obj[key], i = parse(s, i + 1)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return obj, i + 1 end
      if d ~= "," then error("expected ',' or '}' at " .. i, 0) end
      i = skip(s, i + 1)
    end
  elseif c == "[" then
    local arr = {}
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return arr, i + 1 end
    while true do
      arr[#arr + 1], i = parse(s, i)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "]" then return arr, i + 1 end
      if d ~= "," then error("expected ',' or ']' at " .. i, 0) end
      i = i + 1
    end
  elseif c == '"' then
    return parse_string(s, i)
  elseif s:sub(i, i + 3) == "true" then return true, i + 4
  elseif s:sub(i, i + 4) == "false" then return false, i + 5
  elseif s:sub(i, i + 3) == "null" then return M.null, i + 4
  end
  local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if num and #num > 0 and tonumber(num) then
    local v = tonumber(num)
    if math.type(v) == "float" and v == math.floor(v) and not num:find("[.eE]") then
      v = math.tointeger(v) or v
    end
    return v, i + #num
  end
  error("unexpected '" .. c .. "' at " .. i, 0)
end

function M.decode(text)
  local ok, v, i = pcall(parse, text, 1)
  if not ok then return nil, v end
  if skip(text, i) <= #text then return nil, "trailing text at " .. i end
  return v
end

return M
