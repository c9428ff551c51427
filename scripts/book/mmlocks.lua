-- mmlocks.lua: pandoc filter for the mmlocks book.
--  1. book.md's  ::: {.chapters}  div (a list of chapter files) is replaced
--     by the chapters, read as one Markdown document so section ids stay unique.
--  2. Code blocks with include="FILE" get their text from FILE: a named
--     region (region="NAME"), a C function (function="NAME"), a macro
--     (define="NAME"), a line range (lines="A-B") or the whole file.
--     "linux:PATH" is resolved in the pristine 6.12 tree ($MMLOCKS_LINUX_SRC).
--     In a .patch file, function/define/region look only at the added lines.
--     Marker lines are never shown. Anything missing fails the build.
--  3. Images of diagrams/X.dot become build/diagrams/X.svg (rendered by make);
--     other local images must exist.
--  4. ::: {.results experiment="NAME"} is replaced by the box summarize.py
--     --box makes from the reader's own run (results/latest, or the run
--     directory MMLOCKS_RESULTS names) when that run has NAME: verdicts,
--     the kernel counters (counters="A B" picks them), the plot; the run's
--     record keeps the rest. reference="RUN" (checked here) is the run the
--     site's "Measured on this machine" page shows beside it.
--  5. Measured numbers by reference (refs.lua): []{.ref ...} spans,
--     ::: {.refs} defaults, ::: {.reftable} tables, and an appendix
--     "Reference runs" listing every run the document quotes.
--  6. Every figure opens full size, without JavaScript. In HTML the image is
--     a link to #fig-NAME-full, an empty span in the figure; book.css turns
--     the link into a scrolling overlay while that span is the :target, with
--     the image at its own width (the SVG's, set as the width attribute).
--     In EPUB the image links to its own file, which epub-figures.py makes
--     a page of the book (an SVG content document outside the reading order).
--  7. Counts from the code: []{.kver} (the kernel's release) and
--     []{.labcount lab="NN" what="mutants"|"tests"} (a lab's wrong answers
--     and grader tests).
--  8. The reader's apparatus (reader.lua): labelled ::: {.aside kind=...}
--     boxes, numbered quick quizzes whose answers move to their appendix,
--     and glossary links at each term's first use in every chapter. Files
--     under chapters/ without a number (glossary, answers, reference runs
--     and its pages chapters/runs/*.md) are back matter: not numbered.

local refs = dofile((PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "refs.lua")
local reader = dofile((PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "reader.lua")
local json = dofile((PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "json.lua")

local function fail(msg)
  io.stderr:write("book: error: " .. msg .. "\n")
  os.exit(1)
end

local function read_file(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

local function split_lines(s)
  local t = {}
  for line in (s .. (s:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do
    t[#t + 1] = line
  end
  return t
end

local function pesc(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%1")) end

-- A marker line: a comment holding "region: NAME" or "endregion: NAME".
local function marker(line)
  local kind, name = line:match("^%s*[/#%*%-;]+%s*(%a+):%s*([%w%-_]+)%s*%**/?%s*$")
  if kind == "region" or kind == "endregion" then return kind, name end
  return nil
end

local function dedent(lines)
  local common
  for _, l in ipairs(lines) do
    if l:match("%S") then
      local ws = l:match("^[ \t]*")
      if not common or #ws < #common then common = ws end
    end
  end
  if common and #common > 0 then
    for i, l in ipairs(lines) do
      if l:sub(1, #common) == common then lines[i] = l:sub(#common + 1) end
    end
  end
  -- drop leading/trailing blank lines
  while #lines > 0 and not lines[1]:match("%S") do table.remove(lines, 1) end
  while #lines > 0 and not lines[#lines]:match("%S") do table.remove(lines) end
  return lines
end

local function strip_markers(lines)
  local out = {}
  for _, l in ipairs(lines) do
    if not marker(l) then out[#out + 1] = l end
  end
  return out
end

local function extract_region(lines, name, where)
  local out, inside, found, closed = {}, false, false, false
  for _, l in ipairs(lines) do
    local kind, n = marker(l)
    if kind == "region" and n == name then
      if found then fail(where .. ": region '" .. name .. "' opened twice") end
      inside, found = true, true
    elseif kind == "endregion" and n == name then
      if not inside then fail(where .. ": 'endregion: " .. name .. "' without its start") end
      inside, closed = false, true
    elseif inside and not kind then
      out[#out + 1] = l
    end
  end
  if not found then fail(where .. ": region '" .. name .. "' not found") end
  if not closed then fail(where .. ": region '" .. name .. "' is never closed") end
  return dedent(out)
end

-- A C function: the line naming it at column 0 (K&R kernel style puts the
-- return type on the line before), up to the first '}' in column 0.
local function extract_function(lines, name, where)
  local pat = "^[%w_].-%f[%w_]" .. pesc(name) .. "%s*%("
  local pat0 = "^" .. pesc(name) .. "%s*%("
  for i, l in ipairs(lines) do
    if (l:match(pat0) or l:match(pat)) and not l:match(";%s*$") and not l:match("^#") then
      -- is it a definition? a '{' in column 0 (or at line end) before any ';' line end
      local j, body = i, nil
      while j <= #lines and j < i + 12 do
        if lines[j]:match("^{") or lines[j]:match("%)%s*{%s*$") then body = j break end
        if j > i and lines[j]:match(";%s*$") then break end
        j = j + 1
      end
      if body then
        local s = i
        while s > 1 and lines[s - 1]:match("^[%w_]") and not lines[s - 1]:match("[;}]%s*$")
              and not lines[s - 1]:match("%*/%s*$") and not lines[s - 1]:match("^#") do
          s = s - 1
        end
        for e = body, #lines do
          if lines[e]:match("^}") then
            local out = {}
            for k = s, e do out[#out + 1] = lines[k] end
            return strip_markers(out)
          end
        end
        fail(where .. ": function '" .. name .. "' has no closing brace in column 0")
      end
    end
  end
  fail(where .. ": function '" .. name .. "' not found")
end

local function extract_define(lines, name, where)
  local pat = "^#%s*define%s+" .. pesc(name) .. "[%s%(]"
  for i, l in ipairs(lines) do
    if l:match(pat) or l:match("^#%s*define%s+" .. pesc(name) .. "$") then
      local out, k = { l }, i
      while lines[k]:match("\\%s*$") and k < #lines do
        k = k + 1
        out[#out + 1] = lines[k]
      end
      return out
    end
  end
  fail(where .. ": macro '" .. name .. "' not found")
end

local linux_version
local function linux_root()
  local root = os.getenv("MMLOCKS_LINUX_SRC")
  if not root or root == "" then
    fail("MMLOCKS_LINUX_SRC is not set (run the build through 'make book')")
  end
  if not linux_version then
    local mk = read_file(root .. "/Makefile") or ""
    local v = mk:match("\nVERSION = (%d+)") or "?"
    local p = mk:match("\nPATCHLEVEL = (%d+)") or "?"
    local s = mk:match("\nSUBLEVEL = (%d+)") or "?"
    linux_version = v .. "." .. p .. "." .. s
  end
  return root
end

-- An excerpt: from the first line holding FROM to the first line after it
-- holding TO (plain texts, not patterns). What is cut is shown by an
-- elision line; a function keeps its signature and closing brace, so the
-- reader sees where the excerpt sits.
local function excerpt(lines, from, to, is_function, where)
  if not from and not to then return lines end
  local a, b = 1, #lines
  if from then
    a = nil
    for i, l in ipairs(lines) do
      if l:find(from, 1, true) then a = i break end
    end
    if not a then fail(where .. ": excerpt start '" .. from .. "' not found") end
  end
  if to then
    b = nil
    for i = a, #lines do
      if lines[i]:find(to, 1, true) then b = i break end
    end
    if not b then fail(where .. ": excerpt end '" .. to .. "' not found after '" .. (from or "the start") .. "'") end
  end
  local out = {}
  local function elide(next_line)
    out[#out + 1] = ((next_line or ""):match("^[ \t]*"):gsub(" $", "")) .. "/* ... */"
  end
  if a > 1 then
    if is_function then
      local k = 1
      repeat out[#out + 1] = lines[k]; k = k + 1 until lines[k - 1]:match("{%s*$") or k > a - 1
    end
    if #out == 0 or out[#out] ~= lines[a - 1] then elide(lines[a]) end
  end
  for i = a, b do out[#out + 1] = lines[i] end
  if b < #lines then
    if is_function and lines[#lines]:match("^}") then
      if b < #lines - 1 then elide(lines[b]) end
      out[#out + 1] = lines[#lines]
    else
      elide(lines[b])
    end
  end
  return out
end

local function include_block(el)
  local spec = el.attributes.include
  local path, label = spec, spec
  if spec:match("^linux:") then
    local rel = spec:sub(7)
    path = linux_root() .. "/" .. rel
    label = "Linux " .. linux_version .. ", " .. rel
  end
  local text = read_file(path)
  if not text then fail("listing file not found: " .. spec) end
  local lines = split_lines(text)
  local what
  local region, fn, def, range = el.attributes.region, el.attributes["function"],
                                 el.attributes.define, el.attributes.lines
  local where = spec
  -- A function, macro or region of a patch is looked up in the lines the
  -- patch adds (their leading '+' removed): the code our backport writes.
  if (region or fn or def) and spec:match("%.patch$") then
    local added = {}
    for _, l in ipairs(lines) do
      if l:match("^%+") and not l:match("^%+%+%+ ") then added[#added + 1] = l:sub(2) end
    end
    lines = added
    label = spec .. " (lines it adds)"
  end
  if region then
    lines = extract_region(lines, region, where)
    what = "region " .. region
  elseif fn then
    lines = extract_function(lines, fn, where)
    what = fn .. "()"
  elseif def then
    lines = extract_define(lines, def, where)
    what = def
  elseif range then
    local a, b = range:match("^(%d+)%-(%d+)$")
    a, b = tonumber(a), tonumber(b)
    if not a or a > b or b > #lines then fail(where .. ": bad line range '" .. range .. "'") end
    local out = {}
    for k = a, b do out[#out + 1] = lines[k] end
    lines = strip_markers(out)
    what = "lines " .. range
  else
    lines = strip_markers(lines)
  end
  if range and spec:match("^linux:") then
    -- A line range of the kernel tree moves with every point release: it
    -- must name a text its first lines hold, and the build fails when the
    -- installed tree no longer has it there.
    local expect = el.attributes.expect
    if not expect then fail(where .. ": lines=\"" .. range .. "\" needs expect=\"TEXT\" (a text the range's first line holds)") end
    if not (lines[1] or ""):find(expect, 1, true) then
      fail(where .. ": lines " .. range .. " of Linux " .. linux_version .. " no longer start with '" .. expect .. "'")
    end
  end
  lines = excerpt(lines, el.attributes.from, el.attributes.to, fn ~= nil, where)
  if #lines == 0 then fail(where .. ": " .. (what or "file") .. " is empty") end
  el.text = table.concat(lines, "\n")
  if el.attributes.from or el.attributes.to then what = (what or "file") .. ", excerpt" end
  for _, k in ipairs({ "include", "region", "function", "define", "lines", "expect", "from", "to" }) do
    el.attributes[k] = nil
  end
  local caption = pandoc.Para({ pandoc.Code(label), pandoc.Str(what and (", " .. what) or "") })
  return pandoc.Div({ el, caption }, pandoc.Attr("", { "listing" }))
end

local function Image(img)
  local src = img.src
  if src:match("^%a+://") or src:match("^data:") then return nil end
  local name = src:match("^diagrams/([%w%-_]+)%.dot$")
  if name then
    if not exists(src) then fail("diagram not found: " .. src) end
    local svg = "build/diagrams/" .. name .. ".svg"
    if not exists(svg) then fail("diagram " .. src .. " was not rendered to " .. svg .. " (run 'make book')") end
    img.src = svg
    return img
  end
  if not exists(src) then fail("image not found: " .. src) end
  return nil
end

-- The width an SVG asks for, in CSS px: its width attribute (pt or px),
-- else its viewBox (gnuplot writes only a viewBox). nil if it has neither.
local function svg_width_px(path)
  local tag = (read_file(path) or ""):match("<svg[^>]*>")
  if not tag then return nil end
  local w, unit = tag:match('%swidth="([%d%.]+)(%a*)"')
  if w and (unit == "pt" or unit == "px" or unit == "") then
    return math.floor(tonumber(w) * (unit == "pt" and 4 / 3 or 1) + 0.5)
  end
  local vbw = tag:match('%sviewBox="%s*[%-%d%.]+[%s,]+[%-%d%.]+[%s,]+([%d%.]+)')
  return vbw and math.floor(tonumber(vbw) + 0.5) or nil
end

local figure_ids = {}
local function Figure(para)
  local epub = FORMAT:match("^epub")
  if not FORMAT:match("^html") and not epub then return nil end
  local img = para.content[1]
  if #para.content ~= 1 or img.t ~= "Image" or not img.title:match("^fig:") then return nil end
  -- fig-NAME for diagrams/NAME.dot, else fig- and the path (build/plots/x.svg:
  -- fig-plots-x; a reference run's plot: fig-reference-EXP-RUN-x)
  local path = img.src:gsub("^build/", ""):gsub("^diagrams/", ""):gsub("%.%w+$", "")
  local id = "fig-" .. path:gsub("[^%w%-_]", "-")
  figure_ids[id] = (figure_ids[id] or 0) + 1
  if figure_ids[id] > 1 then id = id .. "-" .. figure_ids[id] end
  local attrs = {}
  for k, v in pairs(img.attributes) do attrs[k] = v end
  local w = img.src:match("%.svg$") and svg_width_px(img.src)
  if w and not attrs.width then attrs.width = tostring(w) end
  local image = pandoc.Image(img.caption, img.src, img.title:sub(5),
                             pandoc.Attr(img.identifier, img.classes, attrs))
  local raw = function(s) return pandoc.RawInline("html", s) end
  local caption = pandoc.List(img.caption)
  local href = epub and img.src or "#" .. id .. "-full"
  caption:extend({ pandoc.Space(), raw('<a class="zoom-hint" href="' .. href .. '">(full size)</a>') })
  local body = { raw('<a class="zoom" href="' .. href .. '">'), image, raw("</a>") }
  if not epub then	-- the overlay's :target and its Close link
    body = { raw('<span class="zoom-target" id="' .. id .. '-full"></span>'),
             raw('<a class="zoom" href="' .. href .. '" title="Open full size">'), image,
             raw('</a><a class="zoom-close" href="#' .. id .. '">Close</a>') }
  end
  return {
    pandoc.RawBlock("html", '<figure id="' .. id .. '" class="zoomable">'),
    pandoc.Plain(body),
    pandoc.RawBlock("html", "<figcaption>"),
    pandoc.Plain(caption),
    pandoc.RawBlock("html", "</figcaption></figure>"),
  }
end

-- The run a results box shows: MMLOCKS_RESULTS (a run directory; make
-- test's fixture is build/test-results/fixture), else results/latest.
local SUMMARIZE = (PANDOC_SCRIPT_FILE:gsub("[^/]*$", "")) .. "../../labs/kernel/summarize.py"
local function results_dir()
  local d = os.getenv("MMLOCKS_RESULTS")
  return (d and d ~= "") and d or "results/latest"
end

-- The box for experiment exp of run dir, as summarize.py --box writes it
-- (from the run's JSON lines, so a run from before a change to the box
-- shows in the new form), or nil when the run has no trace of exp.
local function results_box(exp, dir, counters)
  local args = { SUMMARIZE, "--box", exp, dir }
  if counters then args[#args + 1] = "--counters"; args[#args + 1] = counters end
  local ok, out = pcall(pandoc.pipe, "python3", args, "")
  if not ok then
    if type(out) == "table" and out.error_code == 3 then return nil end
    fail("summarize.py --box " .. exp .. " " .. dir .. " failed: " .. tostring(out))
  end
  return pandoc.read(out, "markdown").blocks
end

-- In a results box a kernel name (code) may break after an underscore and
-- nowhere else, so a narrow column wraps names, never a number. Its tables
-- are laid out by their contents (numbers never wrap: book.css), not by
-- pandoc's widths from the Markdown's dashes; the first holds the verdicts
-- (table.results-rows), the others the counters (table.results-counters).
local function box_layout(blocks)
  local html = FORMAT:match("^html") or FORMAT:match("^epub")
  local n = 0
  return pandoc.walk_block(pandoc.Div(blocks), {
    Code = html and function(c)
      local t = c.text:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub("_", "_<wbr/>")
      return pandoc.RawInline("html", "<code>" .. t .. "</code>")
    end or nil,
    Table = function(t)
      n = n + 1
      for i, cs in ipairs(t.colspecs) do t.colspecs[i] = { cs[1], pandoc.ColWidthDefault } end
      t.classes:insert(n == 1 and "results-rows" or "results-counters")
      return t
    end,
  }).content
end

local function Div(div)
  -- ::: {.kernel-parts} :::: the labs' kernel parts as labs/*/kernel/ holds
  -- them today (tests, the skeleton's score, wrong answers and the test
  -- that catches each), from labs/kernel/kparts.py table.
  if div.classes:includes("kernel-parts") then
    local ok, out = pcall(pandoc.pipe, "python3", { "labs/kernel/kparts.py", "table" }, "")
    if not ok then fail("labs/kernel/kparts.py table failed: " .. tostring(out)) end
    return pandoc.Div(pandoc.read(out, "markdown").blocks, pandoc.Attr("", { "kernel-parts" }))
  end
  if div.classes:includes("results") then
    local exp = div.attributes.experiment
    if not exp then fail("a .results block needs experiment=\"NAME\"") end
    local dir = results_dir()
    local blocks = results_box(exp, dir, div.attributes.counters)
    local own
    if blocks then
      local classes = { "results", "measured" }
      local meta = json.decode(read_file(dir .. "/meta.json") or "")
      if type(meta) == "table" and meta.fixture then classes[#classes + 1] = "fixture" end
      own = pandoc.Div(box_layout(blocks), pandoc.Attr("", classes))
    else
      own = pandoc.Div(div.content, pandoc.Attr("", { "results", "not-measured" }))
    end
    -- reference="RUN" names the run the chapter quotes: the site's
    -- "Measured on this machine" page sets the reader's numbers beside it.
    -- In the book the chapter's own table quotes that run, so its full
    -- tables (up to ten columns) are not repeated here.
    local out = { own }
    for run in (div.attributes.reference or ""):gmatch("%S+") do
      refs.check_run(exp, run, div.attributes.src)
    end
    return out
  end
  if div.classes:includes("reftable") then return refs.reftable(div) end
  return nil
end

-- []{.kver}: the version of the kernel tree the book was built against
-- (the one the lab kernel is built from), so the prose never names a point
-- release the reader does not have.
local function kver_span(sp)
  if not sp.classes:includes("kver") then return nil end
  linux_root()
  return pandoc.Str(linux_version)
end

-- ::: {.lab-answer lab="NN" todo="N" [ktodo="N"]} wraps a listing whose code is what a
-- lab (ktodo: its kernel part) asks the student to write. Its ::: {.for-students} div says what the
-- student needs instead (the rule, the invariant, the steps). The full book
-- shows the listing and drops the .for-students text; the students' book
-- (a students' copy, which has labs/tools/exercises.txt, or
-- MMLOCKS_STUDENT=1) shows only the .for-students text and where the lab
-- asks for the code.
local function student_book()
  local e = os.getenv("MMLOCKS_STUDENT")
  if e and e ~= "" then return e ~= "0" end
  return exists("labs/tools/exercises.txt")
end

local function lab_slug(nn)
  local p = io.popen("ls -d labs/" .. nn .. "-* 2>/dev/null")
  local d = p and p:read("l")
  if p then p:close() end
  return d
end

-- []{.labcount lab="NN" what="mutants"|"tests"}: a count that comes from the
-- code, so the prose never types it. mutants: labs/NN-*/mutants/*.patch;
-- tests: the Test( macros of labs/NN-*/grader/*.c (one Criterion test
-- each, one point each). A students' copy has no mutants/ folders:
-- labs/tools/labcounts.txt (written by labs/tools/student-dist) keeps the
-- counts. A bad lab or what fails the build.
local function lines_of(cmd)
  local p = io.popen(cmd)
  local t = {}
  if p then
    for l in p:lines() do t[#t + 1] = l end
    p:close()
  end
  return t
end

local function labcount(nn, what)
  local dir = lab_slug(nn)
  if not dir then fail(".labcount: no lab labs/" .. nn .. "-*") end
  if what == "mutants" then
    local n = #lines_of("ls " .. dir .. "/mutants/*.patch 2>/dev/null")
    if n == 0 then
      local saved = read_file("labs/tools/labcounts.txt") or ""
      local m = saved:match("\n?" .. nn .. " mutants (%d+)")
      if m then return tonumber(m) end
    end
    return n
  end
  local n = 0
  for _, f in ipairs(lines_of("ls " .. dir .. "/grader/*.c 2>/dev/null")) do
    for line in ((read_file(f) or "") .. "\n"):gmatch("(.-)\n") do
      if line:match("^%s*Test%s*%(") then n = n + 1 end
    end
  end
  -- A lab graded by a program (lab 08's grader/grade.py) names each test in
  -- a test("NAME", ...) call.
  for _, f in ipairs(lines_of("ls " .. dir .. "/grader/*.py 2>/dev/null")) do
    for line in ((read_file(f) or "") .. "\n"):gmatch("(.-)\n") do
      if line:match('^%s*test%s*%(%s*"') then n = n + 1 end
    end
  end
  if n == 0 then fail(".labcount: " .. dir .. "/grader/ has no Test( macro in *.c nor test(\"NAME\" call in *.py") end
  return n
end

local function labcount_span(sp)
  if not sp.classes:includes("labcount") then return nil end
  local nn, what = sp.attributes.lab or "", sp.attributes.what or ""
  if not nn:match("^%d%d$") then fail("a .labcount span needs lab=\"NN\" (two digits), got '" .. nn .. "'") end
  if what ~= "mutants" and what ~= "tests" then
    fail(".labcount for lab " .. nn .. ": what=\"mutants\" or what=\"tests\", got '" .. what .. "'")
  end
  return pandoc.Str(tostring(labcount(nn, what)))
end

local function code_span(sp)
  return kver_span(sp) or labcount_span(sp)
end

local function lab_answer(div)
  if not div.classes:includes("lab-answer") then return nil end
  local nn = div.attributes.lab or ""
  if not nn:match("^%d%d$") then fail("a .lab-answer div needs lab=\"NN\" (two digits)") end
  local dir = lab_slug(nn)
  if not dir then fail(".lab-answer: no lab labs/" .. nn .. "-*") end
  local for_students, rest = nil, {}
  for _, b in ipairs(div.content) do
    if b.t == "Div" and b.classes:includes("for-students") then
      if for_students then fail(".lab-answer for " .. dir .. ": more than one .for-students div") end
      for_students = b
    else
      rest[#rest + 1] = b
    end
  end
  if not for_students or #for_students.content == 0 then
    fail(".lab-answer for " .. dir .. ": it needs a non-empty ::: {.for-students} div (what the student needs to write it)")
  end
  if not student_book() then
    return pandoc.Div(rest, pandoc.Attr("", { "lab-answer" }, { lab = nn }))
  end
  local todo = div.attributes.todo
  local ktodo = div.attributes.ktodo -- the lab's kernel part, labs/NN-slug/kernel/
  local steps = {}
  if todo then steps[#steps + 1] = "TODO " .. todo end
  if ktodo then steps[#steps + 1] = "the kernel part's TODO " .. ktodo end
  local where = "Lab " .. nn .. (#steps > 0 and (", " .. table.concat(steps, " and ")) or "") ..
                " asks you to write this code ("
  local ptr = pandoc.Para({ pandoc.Strong({ pandoc.Str("Your turn.") }), pandoc.Space(),
                            pandoc.Str(where), pandoc.Code(dir .. "/handout.md"),
                            pandoc.Str("); the listing is in the instructors' edition.") })
  local out = { ptr }
  for _, b in ipairs(for_students.content) do out[#out + 1] = b end
  return pandoc.Div(out, pandoc.Attr("", { "lab-answer-student" }, { lab = nn }))
end

local function CodeBlock(el)
  if el.attributes.include then return include_block(el) end
  return nil
end

-- Chapter numbers come from the file names (chapters/07-x.md is chapter 7
-- even while chapter 6 is not written yet), so a chapter, its lab
-- (labs/07-x) and its cross-references agree. Pandoc's --number-sections
-- keeps a header's own `number` attribute: set it on every numbered header,
-- NN for the chapter, NN.k and NN.k.j below it; .unnumbered ones are skipped
-- as pandoc skips them.
local function number_sections(blocks)
  local out, nn, count, back = {}, nil, {}, false
  for _, b in ipairs(blocks) do
    if b.t == "Div" and b.classes:includes("mmlocks-chapter") then
      nn, count = tonumber(b.attributes.nn), {}
      back = b.attributes.nn == "none"
    else
      if b.t == "Header" and back and not b.classes:includes("unnumbered") then
        b.classes:insert("unnumbered")
      end
      if b.t == "Header" and nn and not b.classes:includes("unnumbered") then
        if b.level == 1 then
          count = {}
          b.attributes.number = tostring(nn)
        else
          count[b.level] = (count[b.level] or 0) + 1
          for l = b.level + 1, 6 do count[l] = nil end
          local parts = { tostring(nn) }
          for l = 2, b.level do parts[#parts + 1] = tostring(count[l] or 0) end
          b.attributes.number = table.concat(parts, ".")
        end
      end
      out[#out + 1] = b
    end
  end
  return out
end

-- Expand book.md's chapter list.
local function Pandoc(doc)
  local blocks = {}
  local found = false
  for _, b in ipairs(doc.blocks) do
    if b.t == "Div" and b.classes:includes("chapters") then
      found = true
      local texts = {}
      pandoc.walk_block(b, {
        Code = function(c)
          local t = read_file(c.text)
          if not t then fail("chapter listed in book.md not found: " .. c.text) end
          -- An empty div marks where each chapter starts, for number_sections().
          -- Other files (check-refs.sh renders handouts this way) keep
          -- pandoc's own numbering.
          local nn = c.text:match("^chapters/(%d+)%-[^/]*%.md$")
          local mark = nn and ("::: {.mmlocks-chapter nn=" .. nn .. "}\n:::\n\n") or ""
          -- The back matter (glossary, answers, reference runs) is not numbered.
          if not nn and c.text:match("^chapters/") then mark = "::: {.mmlocks-chapter nn=none}\n:::\n\n" end
          -- A div fence right under a paragraph line (a quiz's ::: {.answer})
          -- would be read as part of the paragraph: give every fence a blank line.
          -- (After tagging, so the lines named in errors stay the file's.)
          t = refs.tag_source(t, c.text):gsub("\n([ \t]*:::)", "\n\n%1")
          texts[#texts + 1] = mark .. t
        end,
      })
      if #texts == 0 then fail("book.md: the .chapters list is empty") end
      local chapters = pandoc.read(table.concat(texts, "\n\n"), "markdown", PANDOC_READER_OPTIONS)
      for _, cb in ipairs(number_sections(chapters.blocks)) do blocks[#blocks + 1] = cb end
    else
      blocks[#blocks + 1] = b
    end
  end
  if not found then return nil end
  return pandoc.Pandoc(blocks, doc.meta)
end

-- The appendix of reference runs, after everything else.
local function Appendix(doc)
  return refs.appendix(doc)
end

return {
  { Pandoc = Pandoc },
  { Div = lab_answer, Span = code_span },
  { Div = refs.refs_div },
  { Div = reader.aside },
  { CodeBlock = CodeBlock, Image = Image, Div = Div, Span = refs.span },
  { Para = Figure },
  { Pandoc = Appendix },
  { Pandoc = reader.quizzes },
  { Pandoc = reader.glossary },
}
