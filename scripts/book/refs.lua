-- refs.lua: measured numbers by reference, for the book filter (mmlocks.lua).
-- A reference run is reference/<experiment>/<run>/ (written by
-- `make reference`): <experiment>.jsonl, <experiment>.md, meta.json and a
-- README.md; a `make tools-agree` run is reference/tools-agree/<run>/, its
-- meta.json naming each case's exit status instead of experiments. CONTRIBUTING.md, "Measured numbers", documents the forms:
--   []{.ref ...}  inline: one value, formatted with its unit, linked to the
--                 run's entry in the "Reference runs" appendix
--   ::: {.refs exp=E run=R sel=S}   defaults for the .ref spans inside
--   ::: {.reftable exp=E sel=S cols="..."}  a table across all runs of E
-- Every failure names the chapter and line (src="FILE:LINE", added to each
-- form when the chapters are read) and stops the build. Units, number
-- formatting and aggregates are in refs_units.lua.

local json = dofile((PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "json.lua")

local M = {}
local ROOT = "reference"

local function fail(where, msg)
  local input = PANDOC_STATE and PANDOC_STATE.input_files and PANDOC_STATE.input_files[1]
  io.stderr:write("book: error: " .. (where or input or "?") .. ": " .. msg .. "\n")
  os.exit(1)
end

local U = dofile((PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "refs_units.lua")(fail, json)
local source_unit, convert, fmt_num, with_unit, numbers = U.source_unit, U.convert, U.fmt_num, U.with_unit, U.numbers
local ASK, AGG = U.ASK, U.AGG

local function read(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function safe(name) return type(name) == "string" and name:match("^[%w][%w%-_.]*$") ~= nil end

local function list_dir(dir)
  local out = {}
  local p = io.popen('ls -1 "' .. dir .. '" 2>/dev/null')
  if p then
    for l in p:lines() do if safe(l) then out[#out + 1] = l end end
    p:close()
  end
  table.sort(out)
  return out
end

local TAGGED = { ref = true, refs = true, reftable = true, results = true }

-- Tag every .ref/.refs/.reftable/.results attribute block of a source text with
-- src="FILE:LINE", so errors can name the place. Works on raw Markdown.
function M.tag_source(text, file)
  local out, n = {}, 0
  for line in (text .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    out[#out + 1] = line:gsub("{%.([%w%-]+)([%s}])", function(cls, after)
      if TAGGED[cls] then
        return "{." .. cls .. ' src="' .. file .. ":" .. n .. '"' .. after
      end
    end)
  end
  return table.concat(out, "\n")
end

-- ------------------------------------------------------------ runs
local runs = {}   -- "exp/run" -> { exp, run, dir, records, info, ok, why }
local used = {}   -- "exp/run" -> true, in the order first used
local used_order = {}

local function readme_info(text)
  local info = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local k, v = line:match("^%- ([%w][%w %-]*):%s+(.-)%s*$")
    if k then info[k:lower()] = v end
  end
  return info
end

local function load_run(exp, run, where)
  if not safe(exp) then fail(where, "a reference needs exp=EXPERIMENT") end
  if not safe(run) then fail(where, "a reference needs run=RUN-ID") end
  local key = exp .. "/" .. run
  if runs[key] then return runs[key] end
  local edir = ROOT .. "/" .. exp
  local have = list_dir(edir)
  if #have == 0 then fail(where, "no reference runs of experiment '" .. exp .. "' (" .. edir .. "/ is missing or empty)") end
  local dir = edir .. "/" .. run
  local readme = read(dir .. "/README.md")
  if not readme then
    fail(where, "reference run '" .. run .. "' of experiment '" .. exp .. "' not found (have: " .. table.concat(have, ", ") .. ")")
  end
  local r = { exp = exp, run = run, dir = dir, info = readme_info(readme), records = {} }
  local text = read(dir .. "/" .. exp .. ".jsonl")
  if not text then fail(where, dir .. "/" .. exp .. ".jsonl is missing") end
  local ended
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local l = line:gsub("[\r%z]", "")
    local brace = l:find("{", 1, true)
    if brace then
      local obj = json.decode(l:sub(brace))
      if type(obj) == "table" and type(obj.type) == "string" then
        r.records[#r.records + 1] = obj
        if obj.type == "end" and obj.experiment == exp then ended = obj end
      end
    end
  end
  -- The run's verdict: meta.json's entry for this experiment, and the end record.
  local meta = json.decode(read(dir .. "/meta.json") or "")
  local entry
  for _, e in ipairs(type(meta) == "table" and type(meta.experiments) == "table" and meta.experiments or {}) do
    if e.name == exp then entry = e end
  end
  r.meta = type(meta) == "table" and meta or {}
  local cases = type(meta) == "table" and type(meta.cases) == "table" and meta.cases or nil
  if cases and exp == "tools-agree" then
    -- A make tools-agree run: one boot per case, each with its exit status
    -- (meta.json's cases), and agree.py's agree_case record per case.
    local n = 0
    for name, c in pairs(cases) do
      n = n + 1
      if type(c) ~= "table" or c.rc ~= 0 then
        r.why = (r.why and r.why .. "; " or "") .. "case " .. name .. " exited " .. tostring(type(c) == "table" and c.rc)
      end
    end
    if n == 0 then r.why = "meta.json names no case" end
  elseif not entry then
    r.why = "meta.json has no entry for it"
  elseif entry.ok ~= true then
    r.why = "status " .. tostring(entry.status) .. ", guest rc " .. tostring(entry.guest_rc)
            .. (entry.guest_timeout == true and ", timed out in the guest" or "")
  elseif not ended or ended.rc ~= 0 or ended.timeout == true then
    r.why = "no clean end record"
  end
  runs[key] = r
  return r
end

local function use(r)
  local key = r.exp .. "/" .. r.run
  if not used[key] then used[key] = true; used_order[#used_order + 1] = r end
end

local function anchor(exp, run) return "ref-" .. exp .. "-" .. run:lower() end

-- ------------------------------------------------------------ selection
-- sel="k=v,k^=prefix,k!=v,k<N,k>=N": every clause must hold. Numbers compare
-- as numbers; <, <=, >, >= hold only for numbers.
local function parse_sel(sel, where)
  local clauses, parts, start = {}, {}, 1
  sel = sel or ""
  -- A comma starts a new clause only when "key=" (or ^=, !=) follows it,
  -- so values may contain commas ("metric^=hold per scan, vCPU").
  for i = 1, #sel do
    if sel:sub(i, i) == "," and sel:sub(i + 1):match("^%s*[%w_%.]+%s*[%^!<>=]") then
      parts[#parts + 1] = sel:sub(start, i - 1)
      start = i + 1
    end
  end
  if start <= #sel then parts[#parts + 1] = sel:sub(start) end
  for _, part in ipairs(parts) do
    local k, op, v = part:match("^%s*([%w_%.]+)%s*([%^!<>]?=?)%s*(.-)%s*$")
    local ops = { ["="] = 1, ["^="] = 1, ["!="] = 1, ["<"] = 1, ["<="] = 1, [">"] = 1, [">="] = 1 }
    if not k or not ops[op] or (op:match("[<>]") and not tonumber(v)) then
      fail(where, "bad selector clause '" .. part .. "' (want key=value, key^=prefix, key!=value or key<N, <=, >, >=)")
    end
    clauses[#clauses + 1] = { k = k, op = op, v = v }
  end
  return clauses
end

local function get_path(rec, path)
  local v = rec
  for part in path:gmatch("[^%.]+") do
    if type(v) ~= "table" then return nil end
    local idx = tonumber(part)
    if idx and v[1] ~= nil then v = v[idx + 1] else v = v[part] end
  end
  return v
end

local function matches(rec, clauses)
  for _, c in ipairs(clauses) do
    local v = get_path(rec, c.k)
    local eq
    if v == nil or v == json.null then
      eq = false
    elseif c.op:match("[<>]") then
      local n = tonumber(c.v)
      eq = type(v) == "number" and ((c.op == "<" and v < n) or (c.op == "<=" and v <= n)
        or (c.op == ">" and v > n) or (c.op == ">=" and v >= n))
    elseif type(v) == "number" and tonumber(c.v) then
      eq = v == tonumber(c.v)
    elseif c.op == "^=" then
      eq = tostring(v):sub(1, #c.v) == c.v
    else
      eq = tostring(v) == c.v
    end
    if c.op == "!=" then eq = not eq end
    if not eq then return false end
  end
  return true
end

local function select_records(r, sel, where)
  local clauses = parse_sel(sel, where)
  local out = {}
  for _, rec in ipairs(r.records) do
    if matches(rec, clauses) then out[#out + 1] = rec end
  end
  if #out == 0 then
    local kinds = {}
    for _, rec in ipairs(r.records) do kinds[rec.type] = (kinds[rec.type] or 0) + 1 end
    local ks = {}
    for k, n in pairs(kinds) do ks[#ks + 1] = k .. " x" .. n end
    table.sort(ks)
    fail(where, "no record of " .. r.dir .. " matches sel=\"" .. (sel or "") .. "\" (record types: " .. table.concat(ks, ", ") .. ")")
  end
  return out
end

-- One value: a = attributes (exp, run, sel, field, unit, agg, over, per, digits).
-- Returns the text and the run.
local function resolve(a, where)
  local r = load_run(a.exp, a.run, where)
  if r.why then
    fail(where, "no result: experiment '" .. a.exp .. "' in reference run '" .. a.run .. "' did not complete (" .. r.why .. ")")
  end
  local field = a.field
  if not field or field == "" then fail(where, "a .ref needs field=KEY") end
  local recs = select_records(r, a.sel, where)
  local what = r.dir .. " " .. field .. (a.sel and (" [" .. a.sel .. "]") or "")
  local vals, lower = {}, false
  for _, rec in ipairs(recs) do
    local v = get_path(rec, field)
    if v == nil then fail(where, "field '" .. field .. "' not found in the record of " .. r.dir .. " selected by sel=\"" .. (a.sel or "") .. "\"") end
    if v == json.null then fail(where, "no result: " .. what .. " is null") end
    if a.per then -- per=FIELD: divide by another field of the same record
      local d = get_path(rec, a.per)
      if type(d) ~= "number" or d == 0 or type(v) ~= "number" then
        fail(where, "per=" .. a.per .. ": needs two numbers, the divisor non-zero, in the record of " .. r.dir)
      end
      v = v / d
    end
    vals[#vals + 1] = v
    -- A summary "before"/"after" (or ratio) that hit the program's timeout is a lower bound.
    local bt, at = rec.before_timeouts, rec.after_timeouts
    local hit = function(x) return type(x) == "number" and x > 0 or x == true end
    if (field == "before" and hit(bt)) or (field == "ratio" and hit(bt) and not hit(at)) then lower = true end
    if field == "after" and hit(at) or field == "ratio" and hit(at) then
      fail(where, "no result: " .. what .. " hit the program's timeout, so it is no bound in either direction")
    end
  end
  local from = source_unit(recs[1], field)
  local ask = a.unit and ASK[a.unit]
  if a.per and ask == "pct" and from == source_unit(recs[1], a.per) then
    -- a fraction of like quantities (holds with stops per hold) as a percentage
    for i, v in ipairs(vals) do vals[i] = v * 100 end
    from = "pct"
  end
  if a.unit and ask == nil then fail(where, "unknown unit '" .. a.unit .. "' (use ns, us, ms, s, x, %, /s or count)") end
  if #vals == 1 and type(vals[1]) == "string" then
    if a.unit then fail(where, "unit mismatch: " .. what .. " is text, asked for " .. a.unit) end
    return vals[1], r
  end
  if #vals == 1 and type(vals[1]) == "boolean" then return vals[1] and "yes" or "no", r end
  local nums = numbers(vals, where, what)
  local sig = tonumber(a.digits)
  local agg = a.agg
  if a.over then
    local other = select_records(r, a.over, where)
    if #other ~= 1 or #nums ~= 1 then fail(where, "over= needs sel and over to pick one value each") end
    local o = get_path(other[1], field)
    if type(o) ~= "number" or o == 0 then fail(where, "over=: " .. field .. " of [" .. a.over .. "] is not a non-zero number") end
    if ask == "pct" then
      local p = (nums[1] / o - 1) * 100
      return (p >= 0 and "+" or "\u{2212}") .. fmt_num(math.abs(p), sig or 2) .. "%", r
    end
    convert(1, "x", ask, where, "a ratio")
    return with_unit(fmt_num(nums[1] / o, sig or 2), "x"), r
  end
  local out_unit
  if agg == "range" or agg == "list" then
    local conv = {}
    for i, x in ipairs(nums) do conv[i], out_unit = convert(x, from, ask, where, what) end
    local texts = {}
    if agg == "range" then
      texts = { fmt_num(AGG.min(conv), sig), fmt_num(AGG.max(conv), sig) }
      return with_unit(texts[1] .. "\u{2013}" .. texts[2], out_unit), r
    end
    for i, x in ipairs(conv) do texts[i] = fmt_num(x, sig) end
    return with_unit(table.concat(texts, ", "), out_unit), r
  end
  if #nums > 1 and not agg then
    fail(where, what .. " gives " .. #nums .. " values: narrow sel= or give agg=median|min|max|mean|sum|count|range|list")
  end
  local v = nums[1]
  if agg then
    if not AGG[agg] then fail(where, "unknown agg '" .. agg .. "'") end
    v = AGG[agg](nums)
    if agg == "count" then from = "" end
  end
  v, out_unit = convert(v, from, ask, where, what)
  return (lower and "\u{2265}\u{a0}" or "") .. with_unit(fmt_num(v, sig), out_unit), r
end

local function attrs(el, defaults)
  local a = {}
  for k, v in pairs(defaults or {}) do a[k] = v end
  for k, v in pairs(el.attributes) do a[k] = v end
  return a
end

-- ::: {.refs exp=E run=R sel=S}: fill in what the spans inside leave out.
function M.refs_div(div)
  if not div.classes:includes("refs") then return nil end
  local d = attrs(div)
  d.src = nil
  local content = pandoc.walk_block(pandoc.Div(div.content), {
    Span = function(sp)
      if not sp.classes:includes("ref") then return nil end
      for k, v in pairs(d) do
        if sp.attributes[k] == nil then sp.attributes[k] = v end
      end
      return sp
    end,
  })
  return content.content
end

function M.span(sp)
  if not sp.classes:includes("ref") then return nil end
  local a = attrs(sp)
  local where = a.src
  local text, r = resolve(a, where)
  local typed = pandoc.utils.stringify(sp.content)
  if typed ~= "" and typed:gsub("\u{a0}", " ") ~= text:gsub("\u{a0}", " ") then
    fail(where, "typed '" .. typed .. "' but the reference gives '" .. text:gsub("\u{a0}", " ") .. "'")
  end
  use(r)
  return pandoc.Link({ pandoc.Str(text) }, "#" .. anchor(r.exp, r.run),
                     "reference run " .. r.run .. " (" .. r.exp .. ")", pandoc.Attr("", { "ref" }))
end

-- ::: {.reftable exp=E sel=S cols="@run = run; field unit = Header; ..."}
-- One row per reference run of E and record matching S (runs in name
-- order). A column is FIELD [UNIT] [agg=A] [= HEADER]; @run is the run id
-- (linked), @KEY a "- Key: value" line of the run's README.
function M.reftable(div)
  if not div.classes:includes("reftable") then return nil end
  local a = attrs(div)
  local where = a.src
  if not safe(a.exp) then fail(where, "a .reftable needs exp=EXPERIMENT") end
  if not a.cols then fail(where, "a .reftable needs cols=\"FIELD [UNIT] [= HEADER]; ...\"") end
  local cols = {}
  for spec in a.cols:gmatch("[^;]+") do
    local lhs, head = spec:match("^%s*(.-)%s+=%s+(.-)%s*$") -- " = HEADER", spaces around
    if not lhs then lhs, head = spec:match("^%s*(.-)%s*$"), nil end
    local field, rest = lhs:match("^(%S+)%s*(.-)$")
    if not field then fail(where, "empty column in cols=") end
    local c = { field = field, head = head or field }
    for w in rest:gmatch("%S+") do
      local k, v = w:match("^(%w+)=(.+)$")
      if k then c[k] = v else c.unit = w end
    end
    cols[#cols + 1] = c
  end
  local wanted = a.runs and {} or nil
  for w in (a.runs or ""):gmatch("%S+") do wanted[#wanted + 1] = w end
  local runlist = wanted or list_dir(ROOT .. "/" .. a.exp)
  if #runlist == 0 then fail(where, "no reference runs of experiment '" .. a.exp .. "'") end
  local header, rows = {}, {}
  for i, c in ipairs(cols) do header[i] = { pandoc.Plain(pandoc.read(c.head, "markdown").blocks[1].content) } end
  for _, run in ipairs(runlist) do
    local r = load_run(a.exp, run, where)
    if r.why then fail(where, "no result: experiment '" .. a.exp .. "' in reference run '" .. run .. "' did not complete (" .. r.why .. ")") end
    use(r)
    local recs = select_records(r, a.sel, where)
    for _, rec in ipairs(recs) do
      local row = {}
      for i, c in ipairs(cols) do
        local cell
        if c.field == "@run" then
          cell = { pandoc.Link({ pandoc.Str(run) }, "#" .. anchor(a.exp, run)) }
        elseif c.field:sub(1, 1) == "@" then
          local v = r.info[c.field:sub(2):gsub("_", " ")]
          if not v then fail(where, r.dir .. "/README.md has no '- " .. c.field:sub(2) .. ": ...' line") end
          cell = pandoc.read(v, "markdown").blocks[1].content
        else
          -- Pin the selector to this record: its position among the matches.
          local one = { exp = a.exp, run = run, field = c.field, unit = c.unit, digits = c.digits,
                        agg = c.agg, per = c.per }
          one.sel = a.sel
          local saved = r.records
          r.records = { rec }
          local text = resolve(one, where)
          r.records = saved
          cell = { pandoc.Str(text) }
        end
        row[i] = { pandoc.Plain(cell) }
      end
      rows[#rows + 1] = row
    end
  end
  local aligns, widths = {}, {}
  for i = 1, #cols do aligns[i] = pandoc.AlignDefault; widths[i] = 0 end
  local caption = pandoc.utils.stringify(div.content) ~= "" and div.content[1].content or {}
  local tbl = pandoc.utils.from_simple_table(pandoc.SimpleTable(caption, aligns, widths, header, rows))
  return pandoc.Div({ tbl }, pandoc.Attr("", { "reftable" }))
end

-- A reference run named by a results box must exist and have completed.
function M.check_run(exp, run, where)
  local r = load_run(exp, run, where)
  if r.why then
    fail(where, "no result: experiment '" .. exp .. "' in reference run '" .. run .. "' did not complete (" .. r.why .. ")")
  end
  use(r)
end

-- The appendix: every committed run of every experiment the document
-- quotes, with its README, grouped by experiment. An experiment's runs go
-- at the end of its page (the level-2 header with id runs-EXPERIMENT, from
-- chapters/runs/EXPERIMENT.md) when the book has one, else under a header
-- of their own; all of it under the level-1 "Reference runs" header
-- (id reference-runs), made here when no chapter file provides it.
local function run_blocks(exp, run, dir)
  local blocks = { pandoc.Header(3, { pandoc.Str("Run " .. run) }, pandoc.Attr(anchor(exp, run), { "unnumbered" })) }
  local doc = pandoc.read(read(dir .. "/README.md") or "", "markdown")
  -- What the header already says (experiment, run) or every run shares
  -- (the boilerplate line, the file list) is left out.
  local skip = { Experiment = true, Run = true, Files = true }
  for _, b in ipairs(doc.blocks) do
    if b.t == "BulletList" then
      local items = {}
      for _, item in ipairs(b.content) do
        local key = pandoc.utils.stringify(item):match("^(%w+):")
        if not skip[key] then items[#items + 1] = item end
      end
      b.content = items
    end
    local boiler = b.t == "Para" and pandoc.utils.stringify(b):match("^A make reproduce run copied by make reference")
    if not (b.t == "Header" and b.level == 1) and not boiler then
      if b.t == "Header" then b.level = math.min(b.level + 2, 6); b.classes:insert("unnumbered") end
      blocks[#blocks + 1] = b
    end
  end
  return blocks
end

function M.appendix(doc)
  if #used_order == 0 then return doc end
  local exps, seen = {}, {}
  for _, r in ipairs(used_order) do
    if not seen[r.exp] then seen[r.exp] = true; exps[#exps + 1] = r.exp end
  end
  table.sort(exps)
  local blocks = pandoc.List(doc.blocks)
  local function find(id)
    for i, b in ipairs(blocks) do
      if b.t == "Header" and b.identifier == id then return i end
    end
  end
  if not find("reference-runs") then
    blocks:insert(pandoc.Header(1, { pandoc.Str("Reference runs") }, pandoc.Attr("reference-runs", { "unnumbered" })))
    blocks:insert(pandoc.Para(pandoc.read("Every measured number in the prose links here: the committed run it comes from, under `reference/EXPERIMENT/RUN/` in the repository.", "markdown").blocks[1].content))
  end
  for _, exp in ipairs(exps) do
    local runs_here = {}
    for _, run in ipairs(list_dir(ROOT .. "/" .. exp)) do
      if read(ROOT .. "/" .. exp .. "/" .. run .. "/README.md") then runs_here[#runs_here + 1] = run end
    end
    local add = {}
    for _, run in ipairs(runs_here) do
      use({ exp = exp, run = run, dir = ROOT .. "/" .. exp .. "/" .. run })
      for _, b in ipairs(run_blocks(exp, run, ROOT .. "/" .. exp .. "/" .. run)) do add[#add + 1] = b end
    end
    local at = find("runs-" .. exp)
    if at then
      local stop = #blocks + 1
      for k = at + 1, #blocks do
        local b = blocks[k]
        if b.t == "Header" and b.level <= blocks[at].level then stop = k break end
      end
      for n, b in ipairs(add) do blocks:insert(stop + n - 1, b) end
    else
      blocks:insert(pandoc.Header(2, { pandoc.Code(exp) }, pandoc.Attr("runs-" .. exp, { "unnumbered" })))
      for _, b in ipairs(add) do blocks:insert(b) end
    end
  end
  doc.blocks = blocks
  return doc
end

return M
