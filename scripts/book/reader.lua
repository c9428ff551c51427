-- reader.lua: the reader's apparatus of the book, for mmlocks.lua.
--   ::: {.aside kind="Model vs kernel" title="..."}  a labelled box
--   ::: {.quiz} question ::: {.answer} answer ::: :::
--       numbered "Quick Quiz N.k" per chapter; the answer moves to the
--       appendix "Answers to the quick quizzes" (a ::: {.quiz-answers} div
--       marks where), and the two link to each other.
--   The glossary (chapters/glossary.md): definition-list terms written as
--       [term]{.term match="form|form"} get the id gl-<slug>; the first use of
--       each form in every chapter links to it.
-- Works on the whole document (after the chapters are expanded and
-- numbered), so numbering and "first use" follow the book's order.

local M = {}

local KINDS = {
  ["Model vs kernel"] = true, ["Provenance"] = true,
  ["Newer kernels"] = true, ["Port details"] = true,
  ["Kernel detail"] = true,
}

local function fail(msg)
  io.stderr:write("book: error: " .. msg .. "\n")
  os.exit(1)
end

local function slug(s)
  s = s:lower():gsub("[^%w]+", "-"):gsub("^%-+", ""):gsub("%-+$", "")
  return s
end

-- ------------------------------------------------------------ asides
function M.aside(div)
  if not div.classes:includes("aside") then return nil end
  local kind = div.attributes.kind
  if not kind or not KINDS[kind] then
    local where = div.attributes.src and (div.attributes.src .. ": ") or ""
    fail(where .. "an .aside needs kind= one of \"Model vs kernel\", \"Provenance\", \"Newer kernels\", \"Port details\", \"Kernel detail\" (got "
         .. tostring(kind) .. ")")
  end
  local label = { pandoc.Span({ pandoc.Str(kind) }, pandoc.Attr("", { "aside-kind" })) }
  if div.attributes.title and div.attributes.title ~= "" then
    label[#label + 1] = pandoc.Str(": ")
    for _, i in ipairs(pandoc.read(div.attributes.title, "markdown").blocks[1].content) do label[#label + 1] = i end
  end
  local head = pandoc.Div({ pandoc.Plain(label) }, pandoc.Attr("", { "aside-label" }))
  div.content:insert(1, head)
  div.classes:insert("aside-" .. slug(kind))
  div.attributes.kind = nil
  div.attributes.title = nil
  return div
end

-- ------------------------------------------------------------ quizzes
-- The chapter a top-level header opens: its number and title.
local function chapter_of(h)
  local n = h.attributes.number
  local title = pandoc.utils.stringify(h.content)
  return { number = n, title = title, id = h.identifier, answers = {} }
end

local function split_answer(div)
  local question, answer = {}, nil
  for _, b in ipairs(div.content) do
    if b.t == "Div" and b.classes:includes("answer") then
      if answer then fail("a .quiz has two .answer divs: " .. pandoc.utils.stringify(div.content):sub(1, 60)) end
      answer = b.content
    else
      question[#question + 1] = b
    end
  end
  if not answer then
    fail("a .quiz without an ::: {.answer} inside: " .. pandoc.utils.stringify(pandoc.Div(question)):sub(1, 80))
  end
  return question, answer
end

-- Prefix a block list with a label: into the first paragraph when there is one.
local function prefix(blocks, inlines)
  local out = pandoc.List(blocks):clone()
  if #out > 0 and (out[1].t == "Para" or out[1].t == "Plain") then
    local c = pandoc.List(inlines):clone()
    c:insert(pandoc.Space())
    c:extend(out[1].content)
    out[1] = pandoc.Para(c)
  else
    out:insert(1, pandoc.Para(inlines))
  end
  return out
end

function M.quizzes(doc)
  local chapters, cur, count = {}, nil, 0
  local placeholder = false
  local function number_quiz(div)
    if not div.classes:includes("quiz") then return nil end
    if not cur or not cur.number then
      fail("a .quiz outside a numbered chapter: " .. pandoc.utils.stringify(div.content):sub(1, 60))
    end
    count = count + 1
    local n = cur.number .. "." .. count
    local qid, aid = "qq-" .. n:gsub("%.", "-"), "qqa-" .. n:gsub("%.", "-")
    local question, answer = split_answer(div)
    local q = prefix(question, { pandoc.Strong({ pandoc.Str("Quick Quiz " .. n) }) })
    q:insert(pandoc.Para({ pandoc.Link({ pandoc.Str("Answer") }, "#" .. aid, "", pandoc.Attr("", { "quiz-link" })) }))
    local a = {}
    for _, b in ipairs(prefix(question, { pandoc.Strong({ pandoc.Link({ pandoc.Str("Quick Quiz " .. n) }, "#" .. qid) }) })) do
      a[#a + 1] = b
    end
    a[#a + 1] = pandoc.Para({ pandoc.Strong({ pandoc.Str("Answer:") }) })
    for _, b in ipairs(answer) do a[#a + 1] = b end
    cur.answers[#cur.answers + 1] = pandoc.Div(a, pandoc.Attr(aid, { "quiz-answer" }))
    return pandoc.Div(q, pandoc.Attr(qid, { "quiz" }))
  end
  for i, b in ipairs(doc.blocks) do
    if b.t == "Header" and b.level == 1 then
      cur = chapter_of(b)
      count = 0
      chapters[#chapters + 1] = cur
    elseif b.t == "Div" and b.classes:includes("quiz-answers") then
      placeholder = true
    elseif b.t == "Div" and b.classes:includes("quiz") then
      doc.blocks[i] = number_quiz(b)
    else
      doc.blocks[i] = pandoc.walk_block(b, { Div = number_quiz })
    end
  end
  local out = {}
  for _, ch in ipairs(chapters) do
    if #ch.answers > 0 then
      out[#out + 1] = pandoc.Header(2, { pandoc.Link({ pandoc.Str("Chapter " .. ch.number .. ": " .. ch.title) }, "#" .. ch.id) },
                                    pandoc.Attr("qqa-ch-" .. ch.number, { "unnumbered" }))
      for _, a in ipairs(ch.answers) do out[#out + 1] = a end
    end
  end
  if #out == 0 then
    -- no quizzes: drop the placeholder
    local kept = {}
    for _, b in ipairs(doc.blocks) do
      if not (b.t == "Div" and b.classes:includes("quiz-answers")) then kept[#kept + 1] = b end
    end
    doc.blocks = kept
    return doc
  end
  if not placeholder then
    doc.blocks:insert(pandoc.Header(1, { pandoc.Str("Answers to the quick quizzes") }, pandoc.Attr("quiz-answers", { "unnumbered" })))
    for _, b in ipairs(out) do doc.blocks:insert(b) end
    return doc
  end
  local blocks = {}
  for _, b in ipairs(doc.blocks) do
    if b.t == "Div" and b.classes:includes("quiz-answers") then
      for _, a in ipairs(out) do blocks[#blocks + 1] = a end
    else
      blocks[#blocks + 1] = b
    end
  end
  doc.blocks = blocks
  return doc
end

-- ------------------------------------------------------------ glossary
-- Collect the terms (and give each its id) from definition lists whose
-- terms are [..]{.term} spans.
local function collect_terms(doc)
  local terms = {}
  local function from_span(sp)
    if not sp.classes:includes("term") then return nil end
    local code = (#sp.content == 1 and sp.content[1].t == "Code") and sp.content[1].text or nil
    local text = code or pandoc.utils.stringify(sp.content)
    local id = "gl-" .. slug(text)
    sp.identifier = id
    local forms = {}
    for f in (sp.attributes.match or text):gmatch("[^|]+") do
      f = f:gsub("^%s+", ""):gsub("%s+$", "")
      if f ~= "" then
        local words = {}
        for w in f:gmatch("%S+") do words[#words + 1] = w end
        forms[#forms + 1] = { words = words, code = code ~= nil, text = f }
      end
    end
    sp.attributes.match = nil
    terms[#terms + 1] = { id = id, forms = forms }
    return sp
  end
  for i, b in ipairs(doc.blocks) do
    if b.t == "DefinitionList" then
      doc.blocks[i] = pandoc.walk_block(b, { Span = from_span })
    end
  end
  return terms
end

local function strip(s)
  local pre, word, post = s:match("^([%(%[\"'“‘]*)(.-)([%.,;:!%?%)%]\"'”’]*)$")
  if not word or word == "" then return nil end
  -- a possessive or plural 's stays outside the link
  local base, tail = word:match("^(.-)('s)$")
  if base and base ~= "" then return pre, base, tail .. post end
  return pre, word, post
end

local function same(word, form)
  if word == form then return true end
  -- a capital at the start of a sentence
  return word:sub(1, 1):lower() == form:sub(1, 1) and word:sub(2) == form:sub(2) and form:sub(1, 1):match("%l") ~= nil
end

local function link_chapter(blocks, terms)
  local seen = {}
  local function try(inls, i)
    local el = inls[i]
    for _, t in ipairs(terms) do
      if not seen[t.id] then
        for _, f in ipairs(t.forms) do
          if f.code then
            if el.t == "Code" and el.text == f.text then
              seen[t.id] = true
              return { pandoc.Link({ el }, "#" .. t.id, "", pandoc.Attr("", { "gloss" })) }, 1
            end
          elseif el.t == "Str" then
            local n = #f.words
            local ok, pre, post = true, nil, nil
            for k = 1, n do
              local e = inls[i + 2 * (k - 1)]
              local sep = inls[i + 2 * k - 3]
              if k > 1 and (not sep or (sep.t ~= "Space" and sep.t ~= "SoftBreak")) then ok = false break end
              if not e or e.t ~= "Str" then ok = false break end
              local p, w, q = strip(e.text)
              if not w then ok = false break end
              if (k > 1 and p ~= "") or (k < n and q ~= "") then ok = false break end
              if not (w == f.words[k] or (k == 1 and same(w, f.words[k]))) then ok = false break end
              if k == 1 then pre = p end
              if k == n then post = q end
            end
            if ok then
              seen[t.id] = true
              local words = {}
              for k = 1, n do
                local _, w = strip(inls[i + 2 * (k - 1)].text)
                if k > 1 then words[#words + 1] = pandoc.Space() end
                words[#words + 1] = pandoc.Str(w)
              end
              local out = {}
              if pre ~= "" then out[#out + 1] = pandoc.Str(pre) end
              out[#out + 1] = pandoc.Link(words, "#" .. t.id, "", pandoc.Attr("", { "gloss" }))
              if post ~= "" then out[#out + 1] = pandoc.Str(post) end
              return out, 2 * n - 1
            end
          end
        end
      end
    end
    return nil
  end
  local inlines, blocks_
  inlines = function(inls)
    local out = pandoc.List()
    local i = 1
    while i <= #inls do
      local el = inls[i]
      local rep, used = try(inls, i)
      if rep then
        out:extend(rep)
        i = i + used
      else
        if el.t == "Emph" or el.t == "Strong" or el.t == "Quoted" or el.t == "Underline"
           or el.t == "SmallCaps" or (el.t == "Span" and not el.classes:includes("term")) then
          el.content = inlines(el.content)
        end
        out:insert(el)
        i = i + 1
      end
    end
    return out
  end
  blocks_ = function(bs)
    for _, b in ipairs(bs) do
      if b.t == "Para" or b.t == "Plain" then
        b.content = inlines(b.content)
      elseif b.t == "BulletList" or b.t == "OrderedList" then
        for _, item in ipairs(b.content) do blocks_(item) end
      elseif b.t == "BlockQuote" then
        blocks_(b.content)
      elseif b.t == "Div" and not b.classes:includes("listing") and not b.classes:includes("results") then
        blocks_(b.content)
      end
    end
  end
  blocks_(blocks)
end

function M.glossary(doc)
  local terms = collect_terms(doc)
  if #terms == 0 then return doc end
  -- longer forms first, so "grace period" wins over "grace"
  table.sort(terms, function(a, b) return #a.forms[1].words > #b.forms[1].words end)
  local start = nil
  local function flush(stop)
    if start then
      local h = doc.blocks[start]
      if h.identifier ~= "glossary" and not h.identifier:match("^reference%-runs") and h.identifier ~= "quiz-answers" then
        local slice = {}
        for k = start + 1, stop - 1 do slice[#slice + 1] = doc.blocks[k] end
        link_chapter(slice, terms)
      end
    end
  end
  for i, b in ipairs(doc.blocks) do
    if b.t == "Header" and b.level == 1 then
      flush(i)
      start = i
    end
  end
  flush(#doc.blocks + 1)
  return doc
end

return M
