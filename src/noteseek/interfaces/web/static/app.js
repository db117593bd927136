/* noteseek web page: search, read a note, follow its links, watch the index.
 *
 * Plain JavaScript, no build step and no requests beyond this server. Note text from the API is
 * only ever put into the page with textContent; the one exception is the note's HTML from
 * /render, which the server has sanitized with an allow-list (and the page's Content Security
 * Policy forbids inline scripts on top of that).
 *
 * Routes (location.hash, so back and forward work):
 *   #/search?q=...&mode=...&path=...&tag=...&after=...&before=...&source=...
 *   #/doc/<root>/<path>?line=N&end=M   (highlight lines N-M)   or   ?a=<heading or ^block id>
 */
(() => {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "noteseek.token";
  const STATUS_EVERY_MS = 2000;
  const TOP_K = 20;

  const state = {
    results: [],
    selected: -1,
    searchKey: null,
    searchSeq: 0,
    docSeq: 0,
    cache: new Map(),
    doc: null,
    tokenWaiters: null,
    scopes: null, // scope name -> the operation answering it (null: query_documents)
    scopeWaiters: [],
  };

  // What a search can look in comes from the index's status (the registered source kinds),
  // with the operation that answers each: a kind with results of its own (commits) has one.
  const SCOPE_LABELS = {
    docs: "Notes and docs",
    memory: "Agent memory",
    commits: "Git history",
    all: "Everything",
  };
  const SCOPE_WAIT_MS = 3000;

  // -- small DOM helpers ------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = value;
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  function encodePath(id) {
    return id.split("/").map(encodeURIComponent).join("/");
  }

  function docHash(id, params) {
    const query = params ? new URLSearchParams(params).toString() : "";
    return "#/doc/" + encodePath(id) + (query ? "?" + query : "");
  }

  function fmt(n) {
    return typeof n === "number" ? n.toLocaleString("en") : "—";
  }

  // -- the API, with the token when the server wants one ------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function errorText(data, res) {
    if (data && typeof data.error === "string") return data.error;
    if (data && typeof data.detail === "string") return data.detail;
    if (data && Array.isArray(data.detail)) {
      return data.detail
        .map((d) => [(d.loc || []).filter((x) => x !== "body" && x !== "query").join("."), d.msg]
          .filter(Boolean).join(": "))
        .join("; ");
    }
    return `the server answered ${res.status} ${res.statusText}`;
  }

  async function api(method, path, body) {
    for (let attempt = 0; attempt < 4; attempt++) {
      const token = sessionStorage.getItem(TOKEN_KEY);
      const headers = { Accept: "application/json" };
      if (token) headers.Authorization = "Bearer " + token;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      let res;
      try {
        res = await fetch(path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          cache: "no-store",
          credentials: "same-origin",
        });
      } catch (err) {
        throw new ApiError(0, "cannot reach the noteseek server");
      }
      if (res.status === 401) {
        await askForToken(Boolean(token));
        continue;
      }
      let data = null;
      try {
        data = await res.json();
      } catch (err) {
        data = null;
      }
      if (!res.ok) throw new ApiError(res.status, errorText(data, res));
      return data;
    }
    throw new ApiError(401, "the server did not accept the token");
  }

  function askForToken(rejected) {
    if (rejected) sessionStorage.removeItem(TOKEN_KEY);
    if (!state.tokenWaiters) {
      state.tokenWaiters = [];
      const form = $("token-form");
      $("token-error").textContent = rejected ? "That token was not accepted." : "";
      form.hidden = false;
      $("token").value = "";
      $("token").focus();
    }
    return new Promise((resolve) => state.tokenWaiters.push(resolve));
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token-form").hidden = true;
    const waiters = state.tokenWaiters || [];
    state.tokenWaiters = null;
    waiters.forEach((resolve) => resolve());
    $("q").focus();
  });

  // -- routing -------------------------------------------------------------------------------------

  function parseHash() {
    const hash = location.hash || "";
    if (!hash.startsWith("#/")) return { name: "home", params: new URLSearchParams() };
    const cut = hash.indexOf("?");
    const path = cut < 0 ? hash.slice(2) : hash.slice(2, cut);
    const params = new URLSearchParams(cut < 0 ? "" : hash.slice(cut + 1));
    if (path.startsWith("doc/")) {
      let id;
      try {
        id = decodeURIComponent(path.slice(4));
      } catch (err) {
        id = path.slice(4);
      }
      return { name: "doc", id, params };
    }
    if (path === "search") return { name: "search", params };
    return { name: "home", params };
  }

  function route() {
    const r = parseHash();
    if (r.name === "search") {
      fillForm(r.params);
      runSearch(r.params);
    } else if (r.name === "doc") {
      openDoc(r.id, r.params);
    } else {
      home();
    }
  }

  function home() {
    // A clean slate: no query, no results, no note.
    state.searchSeq++;
    state.docSeq++;
    state.results = [];
    state.selected = -1;
    state.searchKey = null;
    state.doc = null;
    fillForm(new URLSearchParams());
    $("filters").open = false;
    $("results").replaceChildren();
    $("warnings").replaceChildren();
    $("result-count").textContent = "";
    $("reader").hidden = true;
    $("reader-error").hidden = true;
    $("reader-empty").hidden = false;
    $("doc-body").replaceChildren();
    $("links").hidden = true;
    $("graph-panel").hidden = true;
    document.title = "noteseek";
  }

  window.addEventListener("hashchange", route);

  // -- search --------------------------------------------------------------------------------------

  const FIELDS = {
    q: "q", mode: "mode", path: "f-path", tag: "f-tag", after: "f-after", before: "f-before", source: "f-source",
  };
  const DEFAULTS = { mode: "hybrid", source: "docs" };

  function fillForm(params) {
    for (const [key, id] of Object.entries(FIELDS)) {
      const value = params.get(key);
      $(id).value = value || DEFAULTS[key] || "";
    }
    if (["path", "tag", "after", "before", "source"].some((k) => params.get(k))) $("filters").open = true;
  }

  function formParams() {
    const params = new URLSearchParams();
    for (const [key, id] of Object.entries(FIELDS)) {
      const value = $(id).value.trim();
      if (value && value !== DEFAULTS[key]) params.set(key, value);
    }
    return params;
  }

  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const params = formParams();
    if (!params.get("q")) {
      $("q").focus();
      return;
    }
    const hash = "#/search?" + params.toString();
    state.cache.delete(params.toString()); // Search pressed again: ask again
    state.searchKey = null;
    if (location.hash === hash) route();
    else location.hash = hash;
  });

  function queryBody(params) {
    const body = { query: params.get("q"), top_k: TOP_K, explain: true };
    const mode = params.get("mode");
    if (mode) body.mode = mode;
    const path = params.get("path");
    if (path) body.paths = path.split(/\s*,\s*/).filter(Boolean);
    const tag = params.get("tag");
    if (tag) body.tags = tag.split(/[\s,]+/).filter(Boolean);
    for (const key of ["after", "before", "source"]) {
      if (params.get(key)) body[key] = params.get(key);
    }
    return body;
  }

  // Git history: the same filters, with the path filter read as the files a commit changed.
  function commitBody(params) {
    const body = { query: params.get("q"), top_k: TOP_K, explain: true };
    const mode = params.get("mode");
    if (mode) body.mode = mode;
    const path = params.get("path");
    if (path) body.file_pattern = path.split(/\s*,\s*/).filter(Boolean);
    for (const key of ["after", "before"]) {
      if (params.get(key)) body[key] = params.get(key);
    }
    return body;
  }

  // One commit per result, shown like a section: its subject as the title, the file whose
  // hunk matched as the heading, and who and when as a line of its own.
  function commitsAsResults(data) {
    const results = (data.commits || []).map((c) => ({
      ...c,
      title: `${c.short_hash} ${c.subject}`,
      path: c.hash,
      heading_path: c.file ? [c.file] : [],
      commit: {
        date: c.date.slice(0, 10),
        author: c.author,
        files: c.files.length,
        files_changed: Math.max(c.files_changed || 0, c.files.length),
        insertions: c.insertions,
        deletions: c.deletions,
      },
    }));
    return { ...data, results };
  }

  function showScopes(scopes) {
    const ops = new Map(scopes.map((sc) => [sc.name, sc.operation]));
    const select = $("f-source");
    const names = [...select.options].map((o) => o.value);
    if (names.join() !== scopes.map((sc) => sc.name).join()) {
      const current = select.value;
      select.replaceChildren(
        ...scopes.map((sc) => el("option", { value: sc.name, text: SCOPE_LABELS[sc.name] || sc.name })),
      );
      if (ops.has(current)) select.value = current;
    }
    state.scopes = ops;
    for (const wake of state.scopeWaiters.splice(0)) wake();
  }

  // The operation answering a scope; documents need no wait, others wait for the first status.
  async function scopeOperation(source) {
    if (!source || source === "docs") return null;
    if (!state.scopes) {
      await new Promise((resolve) => {
        state.scopeWaiters.push(resolve);
        setTimeout(resolve, SCOPE_WAIT_MS);
      });
    }
    return (state.scopes && state.scopes.get(source)) || null;
  }

  async function runSearch(params) {
    const key = params.toString();
    const seq = ++state.searchSeq;
    if (!params.get("q")) return;
    if (state.searchKey === key && state.results.length) return; // back to the same list
    let data = state.cache.get(key);
    if (!data) {
      $("result-count").textContent = "Searching…";
      try {
        const op = await scopeOperation(params.get("source"));
        data =
          op === "search_git_history"
            ? commitsAsResults(await api("POST", "/search_git_history", commitBody(params)))
            : await api("POST", "/query_documents", queryBody(params));
      } catch (err) {
        if (seq !== state.searchSeq) return;
        showSearchError(err);
        return;
      }
      state.cache.set(key, data);
    }
    if (seq !== state.searchSeq) return;
    state.searchKey = key;
    showResults(data);
  }

  function showSearchError(err) {
    state.results = [];
    state.searchKey = null;
    $("results").replaceChildren();
    $("warnings").replaceChildren();
    $("result-count").textContent = "";
    $("warnings").append(el("p", { class: "error", role: "alert", text: err.message }));
  }

  function showResults(data) {
    const results = data.results || [];
    state.results = results;
    state.selected = -1;
    const n = results.length;
    $("result-count").textContent =
      `${n === 0 ? "No" : n} result${n === 1 ? "" : "s"} for “${data.query}”` +
      ` (${data.mode}, ${data.took_ms} ms)`;
    $("warnings").replaceChildren(
      ...spellingNodes(data),
      ...(data.warnings || []).map((w) => el("p", { class: "warning", text: w })),
    );
    $("results").replaceChildren(...results.map(resultItem));
  }

  function spellingNodes(data) {
    // Words no note holds were searched with the index's spellings near them (typo tolerance).
    if (!data.did_you_mean) return [];
    const params = new URLSearchParams(location.hash.split("?")[1] || "");
    params.set("q", data.did_you_mean);
    const also = (data.corrections || []).map(
      (c) => `${c.word} matches nothing; also searched: ${c.also_searched.join(", ")}`,
    );
    return [
      el(
        "p",
        { class: "did-you-mean" },
        "Did you mean ",
        el("a", { href: "#/search?" + params.toString(), text: data.did_you_mean }),
        "?",
      ),
      ...also.map((text) => el("p", { class: "also-searched", text })),
    ];
  }

  function snippetNodes(snippet) {
    // Matched words arrive wrapped in ** markers: every other piece is a match.
    const parts = String(snippet || "").split("**");
    if (parts.length % 2 === 0) parts[parts.length - 2] += "**" + parts.pop();
    return parts.map((part, i) => (i % 2 ? el("mark", { text: part }) : document.createTextNode(part)));
  }

  function resultItem(r, i) {
    const where = [r.doc_id, ...(r.heading_path || [])].join(" › ");
    const href = docHash(r.doc_id, { line: r.start_line, end: r.end_line });
    const lanes = Object.entries(r.lanes || {}).map(([lane, rank]) =>
      el("span", { class: `lane lane-${lane}`, text: `${lane} #${rank}` }),
    );
    const why = el("button", {
      type: "button",
      class: "why-toggle",
      "aria-expanded": "false",
      "aria-controls": `why-${i}`,
      text: "Why?",
    });
    const whyBox = el("div", { class: "why", id: `why-${i}`, hidden: true });
    why.addEventListener("click", (event) => {
      event.stopPropagation();
      const open = why.getAttribute("aria-expanded") !== "true";
      why.setAttribute("aria-expanded", String(open));
      if (open && !whyBox.childElementCount) whyBox.append(...explainNodes(r));
      whyBox.hidden = !open;
    });
    const item = el(
      "li",
      { class: "result", id: `result-${i}`, tabindex: "-1", "aria-label": `${r.title}, ${where}` },
      el(
        "div",
        { class: "result-head" },
        el("a", { class: "result-title", href, tabindex: "-1", text: r.title || r.path }),
        el("span", { class: "score", title: "score (0-1)", text: Number(r.score).toFixed(3) }),
      ),
      el("div", { class: "where", title: `lines ${r.start_line}-${r.end_line}`, text: where }),
      ...(r.commit ? [commitLine(r.commit)] : []),
      ...(r.last_change ? [changedLine(r.last_change)] : []),
      el("p", { class: "snippet" }, ...snippetNodes(r.snippet)),
      ...(r.also && r.also.length ? [alsoLine(r)] : []),
      el("div", { class: "result-foot" }, ...lanes, why),
      whyBox,
    );
    item.addEventListener("click", (event) => {
      if (event.target.closest("a, button")) return;
      select(i, false);
      openResult(i);
    });
    item.addEventListener("focus", () => select(i, false));
    return item;
  }

  function alsoLine(r) {
    const parts = r.also.map((a) =>
      a.heading_path.length ? a.heading_path[a.heading_path.length - 1] : `lines ${a.start_line}-${a.end_line}`,
    );
    return el("div", { class: "also", text: `also in this document: ${parts.join(" · ")}` });
  }

  function commitLine(c) {
    const counts = `+${c.insertions.toLocaleString("en")} −${c.deletions.toLocaleString("en")}`;
    const total = c.files_changed;
    const files =
      total > c.files
        ? `${c.files.toLocaleString("en")} of ${total.toLocaleString("en")} files shown ${counts}`
        : `${total} file${total === 1 ? "" : "s"} ${counts}`;
    return el("div", { class: "commit-meta", text: `${c.date} · ${c.author} · ${files}` });
  }

  function changedLine(c) {
    return el("div", {
      class: "changed",
      title: `${c.short_hash}: ${c.subject}`,
      text: `Changed ${c.date.slice(0, 10)} by ${c.author}`,
    });
  }

  function explainNodes(r) {
    const ex = r.explain;
    if (!ex) {
      const ranks = Object.entries(r.lanes || {}).map(([l, k]) => `${l} #${k}`).join(", ");
      return [el("p", { text: ranks ? `Ranked by ${ranks}.` : "No lane details." })];
    }
    const fusion = ex.fusion || {};
    const contributions = fusion.contributions || {};
    const rows = [];
    for (const lane of ["keyword", "semantic"]) {
      const d = ex[lane];
      if (!d) continue;
      let raw = d.note || "";
      if (lane === "keyword" && d.rank != null) {
        raw = `BM25 ${d.bm25} (document ${d.document_bm25}, blended ${d.blended}), ${d.match}`;
      } else if (lane === "semantic" && d.rank != null) {
        raw = `cosine ${d.cosine}`;
      }
      rows.push(
        el("tr", {},
          el("th", { scope: "row", text: lane }),
          el("td", { text: d.rank != null ? `#${d.rank}` : "—" }),
          el("td", { text: raw }),
          el("td", { text: contributions[lane] != null ? String(contributions[lane]) : "—" }),
        ),
      );
    }
    const table = el("table", { class: "explain" },
      el("thead", {}, el("tr", {},
        el("th", { scope: "col", text: "Lane" }),
        el("th", { scope: "col", text: "Rank" }),
        el("th", { scope: "col", text: "Raw score" }),
        el("th", { scope: "col", text: "Contribution" }),
      )),
      el("tbody", {}, ...rows),
    );
    const notes = [];
    const factors = [];
    if (fusion.recency_factor != null) factors.push(`recency ×${fusion.recency_factor}`);
    if (fusion.community_factor != null) factors.push(`community ×${fusion.community_factor}`);
    if (fusion.fused != null) {
      notes.push(el("p", {
        text: `Fused ${fusion.fused} → score ${fusion.score}` +
          (factors.length ? ` (${factors.join(", ")})` : "") +
          (fusion.k != null ? `; RRF k = ${fusion.k}` : ""),
      }));
    }
    if (ex.rerank) notes.push(el("p", { text: `Re-ranked: logit ${ex.rerank.logit}, was #${ex.rerank.rank_before}` }));
    const kw = ex.keyword || {};
    if (kw.matched_terms && kw.matched_terms.length) {
      notes.push(el("p", { text: "Matched terms: " + kw.matched_terms.join(", ") }));
    }
    if (kw.missing_terms && kw.missing_terms.length) {
      notes.push(el("p", { text: "Missing terms: " + kw.missing_terms.join(", ") }));
    }
    const fields = Object.entries(kw.fields || {}).filter(([, v]) => v > 0);
    if (fields.length) {
      notes.push(el("p", { text: "By field: " + fields.map(([f, v]) => `${f} ${v}`).join(" · ") }));
    }
    return [table, ...notes];
  }

  function select(i, focus = true) {
    const items = $("results").children;
    if (!items.length) return;
    i = Math.max(0, Math.min(items.length - 1, i));
    if (state.selected >= 0 && items[state.selected]) {
      items[state.selected].removeAttribute("aria-current");
      items[state.selected].tabIndex = -1;
    }
    state.selected = i;
    items[i].setAttribute("aria-current", "true");
    items[i].tabIndex = 0;
    if (focus) {
      items[i].focus();
      items[i].scrollIntoView({ block: "nearest" });
    }
  }

  function openResult(i) {
    const r = state.results[i];
    if (!r) return;
    location.hash = docHash(r.doc_id, { line: r.start_line, end: r.end_line });
  }

  // -- keyboard ------------------------------------------------------------------------------------

  function typing(target) {
    return target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (event.key === "/" && !typing(target)) {
      event.preventDefault();
      $("q").focus();
      $("q").select();
      return;
    }
    if (target === $("q")) {
      if (event.key === "ArrowDown" && state.results.length) {
        event.preventDefault();
        select(state.selected >= 0 ? state.selected : 0);
      }
      return;
    }
    if (!target.closest || !target.closest("#results")) return;
    if (target.closest("button")) return; // the Why? toggle answers Enter and Space itself
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      select(state.selected + (event.key === "ArrowDown" ? 1 : -1));
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      select(event.key === "Home" ? 0 : state.results.length - 1);
    } else if (event.key === "Enter") {
      event.preventDefault();
      openResult(state.selected);
    } else if (event.key === "Escape") {
      $("q").focus();
    }
  });

  // In-page anchors (#fn1 in a note, the skip link): scroll, do not route.
  document.addEventListener("click", (event) => {
    const a = event.target.closest && event.target.closest("a[href^='#']");
    if (!a) return;
    const href = a.getAttribute("href");
    if (href.startsWith("#/")) return;
    event.preventDefault();
    const frag = decodeURIComponent(href.slice(1));
    const inNote = a.closest("#doc-body");
    const target = document.getElementById(inNote ? "ns-" + frag : frag) ||
      document.getElementById(frag);
    if (target) {
      target.scrollIntoView({ block: "start" });
      flash(target);
    }
  });

  // -- the reader ----------------------------------------------------------------------------------

  async function openDoc(id, params) {
    // Read again even when it is the note on show: it may have changed since.
    const seq = ++state.docSeq;
    $("reader-error").hidden = true;
    let data;
    try {
      data = await api("GET", "/render/" + encodePath(id));
    } catch (err) {
      if (seq !== state.docSeq) return;
      $("reader-error").textContent = `Cannot open ${id}: ${err.message}`;
      $("reader-error").hidden = false;
      return;
    }
    if (seq !== state.docSeq) return;
    const previous = state.doc;
    state.doc = data;
    if (!previous || previous.html !== data.html || previous.doc_id !== data.doc_id) showDoc(data);
    else showLinks(data);
    if (!previous || previous.doc_id !== data.doc_id) loadGraph(data.doc_id);
    place(params);
  }

  function showDoc(data) {
    $("reader-empty").hidden = true;
    $("reader").hidden = false;
    $("doc-path").replaceChildren(
      el("span", { class: "root", text: data.root }),
      " / ",
      el("span", { text: data.path }),
    );
    $("doc-title").textContent = data.title;
    document.title = `${data.title} · noteseek`;
    // The one innerHTML on the page: HTML the server sanitized with an allow-list.
    $("doc-body").innerHTML = data.html;
    for (const a of $("doc-body").querySelectorAll("a.ns-external")) a.target = "_blank";
    showLinks(data);
  }

  function place(params) {
    const body = $("doc-body");
    for (const old of body.querySelectorAll(".hit, .flash")) old.classList.remove("hit", "flash");
    const line = parseInt(params.get("line") || "", 10);
    const anchor = params.get("a");
    let target = null;
    if (line > 0) {
      const end = Math.max(line, parseInt(params.get("end") || "", 10) || line);
      const blocks = blocksIn(body, line, end);
      blocks.forEach((b) => b.classList.add("hit"));
      target = blocks[0] || null;
    } else if (anchor) {
      target = document.getElementById("ns-" + anchor);
      if (target) flash(target);
    }
    if (target) target.scrollIntoView({ block: "start" });
    else $("reader").scrollIntoView({ block: "start" });
  }

  function blocksIn(container, start, end) {
    // The outermost blocks within lines start-end; a block only partly inside is entered.
    const out = [];
    for (const child of container.children) {
      if (!child.dataset.line) {
        out.push(...blocksIn(child, start, end));
        continue;
      }
      const a = Number(child.dataset.line);
      const b = Number(child.dataset.lineEnd || a);
      if (b < start || a > end) continue;
      if (a >= start && b <= end + 1) {
        out.push(child);
        continue;
      }
      const inner = blocksIn(child, start, end);
      out.push(...(inner.length ? inner : [child]));
    }
    return out;
  }

  function flash(node) {
    node.classList.remove("flash");
    void node.offsetWidth; // restart the animation
    node.classList.add("flash");
  }

  function linkItem(link, isBacklink) {
    const label = link.title || link.doc_id || link.placeholder;
    const meta = el("span", { class: "muted", text: ` ${link.type.replace("_", " ")} · line ${link.line}` });
    if (link.doc_id) {
      const params = isBacklink ? { line: link.line } : link.anchor ? { a: anchorId(link.anchor) } : null;
      const tag = link.memory ? el("span", { class: "ns-memory", text: "memory" }) : null;
      const said = link.memory && link.context ? el("div", { class: "muted ns-context", text: link.context }) : null;
      return el("li", { class: link.memory ? "memory" : null },
        tag,
        el("a", { href: docHash(link.doc_id, params), title: link.doc_id, text: label }),
        meta,
        said,
      );
    }
    return el("li", { class: "missing" },
      el("a", {
        href: "#/search?" + new URLSearchParams({ q: link.placeholder }).toString(),
        class: "ns-missing",
        title: "No such note yet: search for it",
        text: label,
      }),
      meta,
    );
  }

  function anchorId(anchor) {
    // As the server's slug: ^block ids stay, headings fold to lower-case-words.
    if (anchor.startsWith("^")) return anchor;
    const slug = anchor.toLowerCase().replace(/[^\p{L}\p{N}_\s-]/gu, "").replace(/[\s-]+/g, "-")
      .replace(/^-+|-+$/g, "");
    return slug || "section";
  }

  function showLinks(data) {
    $("links").hidden = false;
    $("outgoing").replaceChildren(
      ...(data.outgoing.length ? data.outgoing.map((l) => linkItem(l, false))
        : [el("li", { class: "muted", text: "none" })]),
    );
    $("backlinks").replaceChildren(
      ...(data.backlinks.length ? data.backlinks.map((l) => linkItem(l, true))
        : [el("li", { class: "muted", text: "none" })]),
    );
    $("outgoing-count").textContent = `(${data.outgoing.length})`;
    $("backlinks-count").textContent = `(${data.backlinks.length})`;
  }

  // -- the neighbourhood graph -------------------------------------------------------------------

  $("graph-depth").addEventListener("change", () => {
    if (state.doc) loadGraph(state.doc.doc_id);
  });

  async function loadGraph(id) {
    const depth = $("graph-depth").value;
    let data;
    try {
      data = await api("GET", `/graph/${encodePath(id)}?depth=${depth}`);
    } catch (err) {
      $("graph").replaceChildren(el("p", { class: "error", text: err.message }));
      return;
    }
    if (!state.doc || state.doc.doc_id !== id) return;
    $("graph-panel").hidden = false;
    drawGraph(data);
  }

  function layout(nodes, edges) {
    // Radial: the note in the middle, one ring per link distance; a second-ring node sits near
    // the first-ring node it hangs from. A few rounds of repulsion then ease overlaps.
    const W = 320;
    const H = 280;
    const pos = new Map();
    const rings = [[], [], []];
    nodes.forEach((n) => rings[Math.min(n.depth, 2)].push(n));
    const r1 = rings[2].length ? 72 : 105;
    const r2 = 125;
    rings[0].forEach((n) => pos.set(n.id, { x: W / 2, y: H / 2, a: 0 }));
    rings[1].forEach((n, i) => {
      const a = (2 * Math.PI * i) / Math.max(rings[1].length, 1) - Math.PI / 2;
      pos.set(n.id, { x: W / 2 + r1 * Math.cos(a), y: H / 2 + r1 * Math.sin(a), a });
    });
    const parentAngle = (n) => {
      for (const e of edges) {
        const other = e.source === n.id ? e.target : e.target === n.id ? e.source : null;
        if (other && pos.has(other) && pos.get(other).a !== undefined && other !== nodes[0].id) {
          return pos.get(other).a;
        }
      }
      return 0;
    };
    const outer = rings[2].map((n) => ({ n, a: parentAngle(n) })).sort((p, q) => p.a - q.a);
    outer.forEach(({ n }, i) => {
      const a = (2 * Math.PI * i) / Math.max(outer.length, 1) - Math.PI / 2;
      pos.set(n.id, { x: W / 2 + r2 * Math.cos(a), y: H / 2 + r2 * Math.sin(a), a });
    });
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < nodes.length; i++) {
        for (let j = i + 1; j < nodes.length; j++) {
          const p = pos.get(nodes[i].id);
          const q = pos.get(nodes[j].id);
          const dx = q.x - p.x;
          const dy = q.y - p.y;
          const d = Math.hypot(dx, dy) || 0.01;
          if (d < 22) {
            const push = (22 - d) / 2;
            const ux = dx / d;
            const uy = dy / d;
            if (i !== 0) { p.x -= ux * push; p.y -= uy * push; }
            q.x += ux * push;
            q.y += uy * push;
          }
        }
      }
    }
    for (const p of pos.values()) {
      p.x = Math.max(12, Math.min(W - 12, p.x));
      p.y = Math.max(12, Math.min(H - 12, p.y));
    }
    return { W, H, pos };
  }

  function drawGraph(data) {
    const { nodes, edges } = data;
    const { W, H, pos } = layout(nodes, edges);
    const root = svg("svg", {
      viewBox: `0 0 ${W} ${H}`,
      role: "group",
      "aria-label": `${nodes.length} notes around this one`,
      class: nodes.length > 14 ? "crowded" : "",
    });
    const defs = svg("defs");
    const marker = svg("marker", {
      id: "graph-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse",
    });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }));
    defs.append(marker);
    root.append(defs);
    const edgeLayer = svg("g", { class: "edges" });
    for (const e of edges) {
      const p = pos.get(e.source);
      const q = pos.get(e.target);
      if (!p || !q) continue;
      const d = Math.hypot(q.x - p.x, q.y - p.y) || 1;
      const r = 9;
      const line = svg("line", {
        x1: p.x + ((q.x - p.x) * r) / d, y1: p.y + ((q.y - p.y) * r) / d,
        x2: q.x - ((q.x - p.x) * r) / d, y2: q.y - ((q.y - p.y) * r) / d,
        class: `edge type-${e.type}`, "marker-end": "url(#graph-arrow)",
      });
      const title = svg("title");
      title.textContent = `${e.type.replace("_", " ")}`;
      line.append(title);
      edgeLayer.append(line);
    }
    root.append(edgeLayer);
    const nodeLayer = svg("g", { class: "nodes" });
    for (const n of nodes) {
      const p = pos.get(n.id);
      const href = n.placeholder
        ? "#/search?" + new URLSearchParams({ q: n.title }).toString()
        : docHash(n.id);
      const link = svg("a", {
        href,
        class: `node${n.center ? " center" : ""}${n.placeholder ? " placeholder" : ""} depth-${n.depth}`,
        "aria-label": n.placeholder ? `${n.title} (no such note yet)` : n.title,
        "data-id": n.id,
      });
      link.append(svg("circle", { cx: p.x, cy: p.y, r: n.center ? 9 : 6.5 }));
      const label = svg("text", { x: p.x, y: p.y - 11, "text-anchor": "middle" });
      label.textContent = n.title.length > 22 ? n.title.slice(0, 21) + "…" : n.title;
      link.append(label);
      const title = svg("title");
      title.textContent = n.placeholder ? `${n.title} (missing note)` : `${n.title}\n${n.id}`;
      link.append(title);
      nodeLayer.append(link);
    }
    root.append(nodeLayer);
    const caption = el("p", {
      class: "muted small",
      text: nodes.length < 2
        ? "No links to or from this note yet."
        : `${nodes.length} notes, ${edges.length} links` + (data.truncated ? " (more not shown)" : ""),
    });
    $("graph").replaceChildren(root, caption);
  }

  // -- the status panel ----------------------------------------------------------------------------

  async function pollStatus() {
    if (document.visibilityState !== "hidden" || !state.statusOnce) {
      try {
        showStatus(await api("GET", "/status"));
        state.statusOnce = true;
        $("st-error").hidden = true;
      } catch (err) {
        $("st-error").textContent = `Status unavailable: ${err.message}`;
        $("st-error").hidden = false;
        $("status-pill").textContent = "offline";
        $("status-pill").className = "pill bad";
      }
    }
    setTimeout(pollStatus, STATUS_EVERY_MS);
  }

  function showStatus(s) {
    if (s.scopes && s.scopes.length) showScopes(s.scopes);
    const indexing = s.status !== "ready";
    $("st-state").textContent = indexing ? "indexing" : "ready";
    $("st-state").className = indexing ? "busy" : "ok";
    $("st-docs").textContent = fmt(s.documents);
    $("st-chunks").textContent = fmt(s.chunks);
    $("st-failed").textContent = fmt(s.failed_files);
    $("st-warned").textContent = fmt(s.warned_files || 0);
    const svc = s.service || {};
    const queued = (svc.queued_jobs || 0) + (svc.queued_paths || 0);
    $("st-activity").textContent =
      [svc.activity || (s.service ? "idle" : "—"), queued ? `${queued} queued` : "", svc.role || ""]
        .filter(Boolean).join(" · ");
    const emb = s.embedding;
    const bar = $("st-emb-bar");
    if (emb && emb.enabled) {
      const pct = emb.total ? Math.floor((100 * emb.embedded) / emb.total) : 100;
      $("st-emb-text").textContent = `${fmt(emb.embedded)} / ${fmt(emb.total)} (${pct}%)`;
      bar.setAttribute("aria-valuenow", String(pct));
      bar.firstElementChild.style.width = pct + "%";
      bar.classList.remove("off");
    } else {
      $("st-emb-text").textContent = "off";
      bar.setAttribute("aria-valuenow", "0");
      bar.firstElementChild.style.width = "0";
      bar.classList.add("off");
    }
    const failures = s.failures || [];
    $("st-failures").hidden = failures.length === 0;
    $("st-failure-list").replaceChildren(
      ...failures.slice(0, 20).map((f) =>
        el("li", {}, el("code", { text: `${f.root}/${f.path}` }), el("span", { text: ` ${f.reason}` })),
      ),
    );
    const pill = $("status-pill");
    pill.textContent = `${fmt(s.documents)} notes · ${indexing ? "indexing" : "ready"}`;
    pill.className = "pill " + (indexing ? "busy" : "ok");
  }

  $("status-pill").addEventListener("click", () => {
    $("status-panel").scrollIntoView({ block: "nearest" });
    $("status-panel").setAttribute("tabindex", "-1");
    $("status-panel").focus();
  });

  // -- start ---------------------------------------------------------------------------------------

  route();
  if (!location.hash.startsWith("#/search")) $("q").focus();
  pollStatus();
})();
