// The taskgraph board: renders the board the server pushes over
// Server-Sent Events (api/events): a whole snapshot first, then after each
// change only the tasks that changed, which it applies to the board it
// holds. It never polls and never reloads; the one timer below only
// re-words "5m ago" and "lease 3m left" each second.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const SVGNS = "http://www.w3.org/2000/svg";
  const NODE_W = 210, NODE_H = 46;
  // A board of more tasks than this hides its completed ones unless the
  // person chose otherwise: finished work would bury the rest.
  const HIDE_COMPLETED_OVER = 300;
  // The least zoom at which the graph's text can be read: Fit never goes
  // below it, and a graph too big to fit at it scrolls instead.
  const READABLE_ZOOM = 0.75;

  const stats = {
    // Read by the browser test and the screenshot script.
    snapshots: 0, renders: 0, version: 0, tasks: 0,
    lastRenderMs: 0, lastRenderWall: 0, firstRenderAt: 0, lastSnapshotAt: 0,
    layouts: 0, lastLayoutMs: 0, layoutAt: 0, layoutVersion: 0, connected: false, lastSnapshotBytes: 0,
    changes: 0, lastChangeBytes: 0, resyncs: 0,
  };
  window.taskgraphBoard = stats;

  const S = {
    snap: null,
    byId: new Map(),
    selected: null,
    offset: 0, // server clock minus ours, in ms
    token: null,
    view: "board",
    zoom: null, // null: fit
    layout: null, // {key, nodes, edges, width, height, ms}
    layoutBusy: false,
    worker: null,
    seq: 0,
    detailError: "",
    // What the filter bar selects; kept for the tab.
    filter: { text: "", label: "", owner: "", state: "" },
    hideCompleted: null, // the person's choice; null: by the board's size
    visible: new Set(), // the ids the filters let through
    wantScroll: true, // bring the frontier into view at the next fitted draw
  };

  // ---- helpers

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) {
      if (k === undefined || k === null || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }

  function serverNow() { return Date.now() + S.offset; }

  function ago(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m";
    const h = Math.floor(m / 60);
    if (h < 48) return h + "h " + (m % 60) + "m";
    return Math.floor(h / 24) + "d";
  }

  function stateLabel(key) {
    const col = S.snap && S.snap.columns.find((c) => c.key === key);
    return col ? col.title : key.replace(/_/g, " ");
  }

  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // A priority is shown when it is not the default, P2.
  function prio(t) {
    const p = t.priority === undefined ? 2 : t.priority;
    return p === 2 ? null : el("span", { class: "prio p" + p, title: "Priority P" + p + (p < 2 ? " (more urgent than the default, P2)" : " (less urgent than the default, P2)") }, "P" + p);
  }

  function labels(t) {
    return (t.labels || []).map((l) => el("span", { class: "label" }, l));
  }

  // The failed or cancelled task that strands t, as "#2 subject (failed)".
  function cause(t) {
    const c = S.byId.get(t.strandedBy);
    return c ? "#" + c.id + " " + clip(c.subject, 40) + " (" + stateLabel(c.state).toLowerCase() + ")" : "#" + t.strandedBy;
  }

  function toast(msg, bad) {
    const t = $("toast");
    t.textContent = msg;
    t.className = bad ? "show bad" : "show";
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.className = ""; }, bad ? 6000 : 2500);
  }

  // ---- the token: given once in the URL fragment (#token=...), kept for the tab

  function readToken() {
    const m = location.hash.match(/token=([A-Za-z0-9_-]+)/);
    if (m) {
      sessionStorage.setItem("taskgraph-token", m[1]);
      history.replaceState(null, "", location.pathname + location.search + "#board");
    }
    S.token = sessionStorage.getItem("taskgraph-token");
  }

  async function post(path, body) {
    const r = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Taskgraph-Token": S.token || "" },
      body: JSON.stringify(body || {}),
    });
    let j = null;
    try { j = await r.json(); } catch (_) { /* no body */ }
    if (!r.ok) throw new Error((j && j.error) || r.status + " " + r.statusText);
    return j;
  }

  function canWrite() { return !!(S.snap && S.snap.writes && S.token); }

  // ---- live updates

  // The board as the events so far make it: the last snapshot, with every
  // change since applied to it in place. Its columns stay in the server's
  // order: Ready by priority, then id; every other column by id.
  let model = null;
  let source = null;

  function connect() {
    const es = new EventSource("api/events");
    source = es;
    es.addEventListener("open", () => {
      stats.connected = true;
      const l = $("live");
      l.textContent = "live";
      l.className = "live on";
    });
    es.addEventListener("error", () => {
      if (es !== source) return;
      stats.connected = false;
      const l = $("live");
      l.className = "live off";
      if (es.readyState === EventSource.CLOSED) {
        // The server answered, and refused the stream (too many pages
        // follow the board, or it is shutting down): the browser does not
        // retry such a refusal by itself.
        l.textContent = "not live (refused by the server: too many open pages?); retrying";
        setTimeout(connect, 10000 + Math.random() * 5000);
        return;
      }
      // The browser reconnects by itself, naming the last event it had:
      // the server sends what changed since, or a whole snapshot.
      l.textContent = "reconnecting…";
    });
    es.addEventListener("snapshot", (e) => {
      if (es !== source) return;
      stats.lastSnapshotBytes = e.data.length;
      const snap = JSON.parse(e.data);
      model = { snap, byId: new Map(snap.tasks.map((t) => [t.id, t])), cols: new Map(snap.columns.map((c) => [c.key, c])) };
      apply();
    });
    es.addEventListener("change", (e) => {
      if (es !== source) return;
      stats.lastChangeBytes = e.data.length;
      const c = JSON.parse(e.data);
      if (!model || c.from !== model.snap.version || !applyChange(c)) {
        resync();
        return;
      }
      stats.changes++;
      apply();
    });
    es.addEventListener("failure", (e) => {
      const p = $("problem");
      p.textContent = "The store could not be read: " + JSON.parse(e.data).error;
      p.hidden = false;
    });
  }

  // resync starts the stream anew, for a whole snapshot: a change that
  // does not follow from the board this page holds.
  function resync() {
    stats.resyncs++;
    model = null;
    source.close();
    connect();
  }

  function claimOrder(a, b) { return (a.priority - b.priority) || (a.id - b.id); }

  // Where x goes in the sorted list, by cmp; found is whether it is there.
  function search(list, x, cmp) {
    let lo = 0, hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(list[mid], x) < 0) lo = mid + 1;
      else hi = mid;
    }
    return { at: lo, found: lo < list.length && cmp(list[lo], x) === 0 };
  }

  // Column ids are kept in the column's order, compared by their tasks.
  function columnCmp(key, tasks) {
    if (key !== "ready") return (a, b) => a - b;
    return (a, b) => claimOrder(tasks.get(a) || { id: a, priority: 2 }, tasks.get(b) || { id: b, priority: 2 });
  }

  function leaveColumn(t) {
    const col = model.cols.get(t.state);
    if (!col) return;
    // Compared by the task as it was: it is still in the map.
    const at = search(col.ids, t.id, columnCmp(t.state, model.byId));
    if (at.found) col.ids.splice(at.at, 1);
    else { const i = col.ids.indexOf(t.id); if (i >= 0) col.ids.splice(i, 1); }
  }

  function joinColumn(t) {
    const col = model.cols.get(t.state);
    if (!col) return;
    const at = search(col.ids, t.id, columnCmp(t.state, model.byId));
    if (!at.found) col.ids.splice(at.at, 0, t.id);
  }

  // applyChange applies a change to the model; false if the result does
  // not add up to the counts the server sent.
  function applyChange(c) {
    const snap = model.snap;
    for (const id of c.removed) {
      const old = model.byId.get(id);
      if (!old) continue;
      leaveColumn(old);
      model.byId.delete(id);
      const at = search(snap.tasks, old, (a, b) => a.id - b.id);
      if (at.found) snap.tasks.splice(at.at, 1);
    }
    for (const t of c.tasks) {
      const old = model.byId.get(t.id);
      if (old) leaveColumn(old);
      model.byId.set(t.id, t);
      joinColumn(t);
      const at = search(snap.tasks, t, (a, b) => a.id - b.id);
      if (at.found) snap.tasks[at.at] = t;
      else snap.tasks.splice(at.at, 0, t);
    }
    snap.version = c.version;
    snap.now = c.now;
    snap.problem = c.problem || undefined;
    if (c.criticalPath) snap.criticalPath = c.criticalPath;
    for (const col of snap.columns) if ((c.counts[col.key] || 0) !== col.ids.length) return false;
    return true;
  }

  let frame = 0;
  function apply() {
    stats.snapshots++;
    stats.lastSnapshotAt = performance.now();
    // Render at most once a frame, whatever arrives in between.
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; if (model) render(model); });
  }

  function render(m) {
    const t0 = performance.now();
    const snap = m.snap;
    S.snap = snap;
    S.offset = Date.parse(snap.now) - Date.now();
    S.byId = m.byId;
    renderHeader();
    computeVisible();
    renderFilters();
    if (S.view === "board") renderBoard();
    else renderGraph();
    renderDetail();
    stats.renders++;
    stats.version = snap.version;
    stats.tasks = snap.tasks.length;
    stats.lastRenderMs = performance.now() - t0;
    stats.lastRenderWall = Date.now();
    if (!stats.firstRenderAt) stats.firstRenderAt = performance.now();
  }

  function renderHeader() {
    const snap = S.snap;
    $("title").textContent = snap.title || "";
    document.title = "taskgraph board" + (snap.title ? " — " + snap.title : "");
    const counts = $("counts");
    counts.replaceChildren(el("span", { class: "total" }, snap.tasks.length + " tasks"),
      ...snap.columns.map((c) => el("span", { class: "pill state-" + c.key, "data-state": c.key },
        el("span", { class: "dot" }), c.title + " ", el("b", {}, c.ids.length))));
    for (const p of counts.querySelectorAll(".pill")) {
      p.title = "Show only " + stateLabel(p.dataset.state).toLowerCase() + " tasks (click again for all)";
      p.addEventListener("click", () => setStateFilter(S.filter.state === p.dataset.state ? "" : p.dataset.state));
    }
    const p = $("problem");
    p.hidden = !snap.problem;
    p.textContent = snap.problem || "";
    $("new-task").hidden = !canWrite();
    $("mode").textContent = snap.writes ? (S.token ? "writes allowed" : "writes allowed, but this page has no token") : "read-only";
    $("mode").className = snap.writes ? "mode writes" : "mode";
  }

  // ---- the board

  function cardMeta(t) {
    const now = serverNow();
    switch (t.state) {
      case "in_progress": {
        const bits = [el("span", { class: "owner" }, t.owner || "no owner")];
        if (t.claimedAt) bits.push(" · claimed ", el("time", { "data-since": t.claimedAt }, ago(now - Date.parse(t.claimedAt))), " ago");
        if (t.leaseExpiresAt) {
          const left = Date.parse(t.leaseExpiresAt) - now;
          if (left <= 0) bits.push(el("span", { class: "lapsed", title: "The lease has lapsed: anyone may claim this task" }, " · ⚠ lease lapsed ", el("time", { "data-since": t.leaseExpiresAt }, ago(-left)), " ago"));
          else bits.push(" · lease ", el("time", { "data-until": t.leaseExpiresAt }, ago(left)), " left");
        }
        return bits;
      }
      case "blocked": {
        const bits = ["waiting on " + (t.waitingOn || []).map((id) => "#" + id).join(", ")];
        if (t.missing && t.missing.length) bits.push(el("span", { class: "lapsed" }, " (missing: " + t.missing.map((id) => "#" + id).join(", ") + ")"));
        return bits;
      }
      case "stranded":
        return [el("span", { class: "stranded-by", title: "It cannot start until that task is reopened" }, "stranded by " + cause(t))];
      case "failed":
      case "cancelled": {
        const bits = [];
        if (t.state === "failed" && t.owner) bits.push(el("span", { class: "owner" }, t.owner), ": ");
        bits.push(el("span", { class: "reason" }, clip(t.reason || t.state, 120)));
        const strands = t.strands || [];
        if (strands.length) {
          bits.push(" · ", el("span", { class: "strands", title: "Stranded until it is reopened: " + strands.map((id) => "#" + id).join(", ") },
            "strands " + strands.length + ": " + strands.slice(0, 4).map((id) => "#" + id).join(", ") + (strands.length > 4 ? ", …" : "")));
        }
        return bits;
      }
      case "completed": {
        const bits = t.owner ? ["done by ", el("span", { class: "owner" }, t.owner)] : ["done"];
        if (t.result) bits.push(": ", el("span", { class: "result" }, clip(t.result, 80)));
        return bits;
      }
      default:
        if (t.blocks.length) return ["unblocks " + t.blocks.map((id) => "#" + id).join(", ")];
        return [];
    }
  }

  // The board's elements are kept across snapshots, each card rebuilt only
  // when what it shows changed: a click (mouse down, mouse up) on a card
  // is never lost to a snapshot that arrives in between.
  const boardDOM = { keys: "", cols: new Map(), cards: new Map() };

  function sameChildren(parent, items) {
    if (parent.children.length !== items.length) return false;
    for (let i = 0; i < items.length; i++) if (parent.children[i] !== items[i]) return false;
    return true;
  }

  function card(t) {
    const c0 = t.strandedBy && S.byId.get(t.strandedBy);
    const sig = JSON.stringify([t.subject, t.state, t.owner, t.claimedAt, t.leaseExpiresAt, t.leaseLapsed, t.waitingOn, t.missing, t.blocks,
      t.priority, t.labels, t.reason, t.result, t.strandedBy, t.strands, c0 && [c0.subject, c0.state]]);
    let c = boardDOM.cards.get(t.id);
    if (!c) {
      c = { li: el("li", { "data-id": t.id, tabindex: 0 }), sig: "" };
      boardDOM.cards.set(t.id, c);
    }
    if (c.sig !== sig) {
      c.sig = sig;
      const tags = labels(t);
      c.li.replaceChildren(el("div", { class: "card-title" }, prio(t), el("span", { class: "id" }, "#" + t.id), " ", t.subject),
        el("div", { class: "card-meta" }, cardMeta(t)),
        ...(tags.length ? [el("div", { class: "labels" }, tags)] : []));
    }
    c.li.className = "card state-" + t.state + (t.leaseLapsed ? " is-lapsed" : "") + (S.selected === t.id ? " selected" : "");
    return c.li;
  }

  // An empty board says how to add a task: the create form when this
  // page may write, the command otherwise.
  let emptySig = "";
  function renderEmpty(empty) {
    const box = $("empty-board");
    box.hidden = !empty;
    $("columns").hidden = empty;
    const sig = JSON.stringify([empty, canWrite(), S.snap.writes]);
    if (!empty || sig === emptySig) return;
    emptySig = sig;
    const cmd = el("p", {}, canWrite() ? "or from a shell: " : "Add one from a shell: ", el("code", { id: "empty-command" }, 'taskgraph add "subject"'));
    const parts = [el("h2", {}, "No tasks yet"), el("p", {}, "Tasks appear here as soon as they are added, by anyone.")];
    if (canWrite()) parts.push(el("button", { type: "button", id: "empty-add", class: "primary", onclick: openCreate }, "Add a task"));
    parts.push(cmd);
    if (!canWrite()) {
      parts.push(el("p", { class: "small" }, S.snap.writes ? "This page has no token: open the URL that taskgraph serve printed to add tasks here."
        : "This board is read-only: start taskgraph serve with --allow-writes to add tasks from this page."));
    }
    box.replaceChildren(...parts);
  }

  function renderBoard() {
    const snap = S.snap;
    renderEmpty(snap.tasks.length === 0);
    const keys = snap.columns.map((c) => c.key).join(",");
    if (boardDOM.keys !== keys) {
      boardDOM.keys = keys;
      boardDOM.cols.clear();
      $("columns").replaceChildren(...snap.columns.map((c) => {
        const col = {
          title: el("span", {}), count: el("span", { class: "count" }),
          list: el("ol", { class: "cards" }), empty: el("li", { class: "empty" }, "none"),
          none: el("li", { class: "empty" }, "none match the filters"),
          note: el("li", { class: "hidden-note" }),
        };
        boardDOM.cols.set(c.key, col);
        col.section = el("section", { class: "column state-" + c.key, "data-state": c.key },
          el("h2", {}, el("span", { class: "dot" }), col.title, col.count), col.list);
        return col.section;
      }));
    }
    const seen = new Set();
    const hideDone = hidingCompleted();
    for (const c of snap.columns) {
      const col = boardDOM.cols.get(c.key);
      col.section.hidden = !!S.filter.state && S.filter.state !== c.key;
      col.title.textContent = c.title;
      // In the server's order: Ready is in claim order (priority, then id).
      const items = [];
      for (const id of c.ids) {
        const t = S.byId.get(id);
        if (!t || !S.visible.has(id)) continue;
        seen.add(id);
        items.push(card(t));
      }
      const collapsed = c.key === "completed" && hideDone && c.ids.length > 0;
      const all = collapsed || items.length === c.ids.length;
      col.count.textContent = all ? c.ids.length : items.length + " of " + c.ids.length;
      col.count.title = all ? "" : items.length + " of the " + c.ids.length + " match the filters";
      if (collapsed) {
        // Finished work, collapsed to one line.
        col.note.replaceChildren(c.ids.length + " completed, hidden",
          el("button", { type: "button", id: "show-completed", onclick: () => setHideCompleted(false) }, "Show"));
        items.push(col.note);
      } else if (!items.length) items.push(c.ids.length ? col.none : col.empty);
      if (!sameChildren(col.list, items)) col.list.replaceChildren(...items);
    }
    for (const id of boardDOM.cards.keys()) if (!seen.has(id)) boardDOM.cards.delete(id);
  }

  // ---- the filters: a search, a label, an owner, a state, and "hide completed"

  function hidingCompleted() {
    if (S.filter.state === "completed") return false; // asked for them
    if (S.hideCompleted !== null) return S.hideCompleted;
    return !!S.snap && S.snap.tasks.length > HIDE_COMPLETED_OVER;
  }

  function filtering() {
    const f = S.filter;
    return !!(f.text.trim() || f.label || f.owner || f.state);
  }

  // matcher returns whether a task passes the filters. The search matches
  // every word it is given, each in the task's id ("#12"), subject,
  // description, owner, key, labels, reason or result.
  function matcher() {
    const f = S.filter, hideDone = hidingCompleted();
    const words = f.text.toLowerCase().split(/\s+/).filter(Boolean);
    return (t) => {
      if (hideDone && t.state === "completed") return false;
      if (f.state && t.state !== f.state) return false;
      if (f.label && !(t.labels || []).includes(f.label)) return false;
      if (f.owner && t.owner !== f.owner) return false;
      if (!words.length) return true;
      const hay = ["#" + t.id, t.subject, t.description, t.owner, t.key, t.reason, t.result, ...(t.labels || [])]
        .filter(Boolean).join("\n").toLowerCase();
      return words.every((w) => (/^#\d+$/.test(w) ? t.id === Number(w.slice(1)) : hay.includes(w)));
    };
  }

  function computeVisible() {
    const ok = matcher();
    S.visible = new Set(S.snap.tasks.filter(ok).map((t) => t.id));
  }

  // setOptions fills a select with values, sorted unless keepOrder, and
  // selects current.
  function setOptions(select, first, values, current, name, keepOrder) {
    const all = [...new Set(values)];
    if (!keepOrder) all.sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    if (current && !all.includes(current)) all.push(current); // keep a choice that no task matches now
    const sig = JSON.stringify([first, all, all.map(name || String)]);
    if (select.dataset.sig !== sig) {
      select.dataset.sig = sig;
      select.replaceChildren(el("option", { value: "" }, first), ...all.map((v) => el("option", { value: v }, name ? name(v) : v)));
    }
    select.value = current;
    select.classList.toggle("active", !!current);
  }

  function renderFilters() {
    const snap = S.snap, f = S.filter;
    const labelSet = [], owners = [];
    for (const t of snap.tasks) {
      labelSet.push(...(t.labels || []));
      if (t.owner) owners.push(t.owner);
    }
    setOptions($("filter-label"), "Any label", labelSet, f.label);
    setOptions($("filter-owner"), "Any owner", owners, f.owner);
    setOptions($("filter-state"), "Any state", snap.columns.map((c) => c.key), f.state, stateLabel, true);
    const hide = $("hide-completed");
    hide.checked = hidingCompleted();
    hide.disabled = f.state === "completed";
    const done = snap.columns.find((c) => c.key === "completed");
    const hiddenDone = hidingCompleted() && done ? done.ids.length : 0;
    const shown = S.visible.size, total = snap.tasks.length;
    $("filter-status").textContent = !total || shown === total ? "" :
      "Showing " + shown + " of " + total + " tasks" + (hiddenDone ? " (" + hiddenDone + " completed hidden)" : "");
    $("clear-filters").hidden = !filtering();
    $("search").classList.toggle("active", !!f.text.trim());
    for (const p of document.querySelectorAll("#counts .pill")) p.classList.toggle("active", p.dataset.state === f.state);
  }

  function saveFilters() {
    sessionStorage.setItem("taskgraph-filters", JSON.stringify(S.filter));
  }

  function loadFilters() {
    try {
      const f = JSON.parse(sessionStorage.getItem("taskgraph-filters") || "{}");
      for (const k of Object.keys(S.filter)) if (typeof f[k] === "string") S.filter[k] = f[k];
    } catch (_) { /* none kept */ }
    const h = localStorage.getItem("taskgraph-hide-completed");
    S.hideCompleted = h === null ? null : h === "1";
    $("search").value = S.filter.text;
  }

  let refilterFrame = 0;
  function refilter() {
    saveFilters();
    if (!S.snap || refilterFrame) return;
    refilterFrame = requestAnimationFrame(() => {
      refilterFrame = 0;
      computeVisible();
      renderFilters();
      S.wantScroll = true;
      if (S.view === "board") renderBoard();
      else renderGraph();
    });
  }

  function setHideCompleted(on) {
    S.hideCompleted = on;
    localStorage.setItem("taskgraph-hide-completed", on ? "1" : "0");
    refilter();
  }

  function setStateFilter(key) {
    S.filter.state = key;
    refilter();
  }

  function clearFilters() {
    S.filter = { text: "", label: "", owner: "", state: "" };
    $("search").value = "";
    refilter();
  }

  // ---- the graph

  function graphShape() {
    // The tasks the filters let through, and the edges between them.
    const nodes = [], edges = [], ghosts = new Set();
    for (const t of S.snap.tasks) {
      if (!S.visible.has(t.id)) continue;
      nodes.push({ id: String(t.id), w: NODE_W, h: NODE_H });
      for (const b of t.blockedBy) {
        if (S.byId.has(b) && !S.visible.has(b)) continue;
        if (!S.byId.has(b) && !ghosts.has(b)) {
          ghosts.add(b);
          nodes.push({ id: "missing-" + b, w: 110, h: 34 });
        }
        edges.push([S.byId.has(b) ? String(b) : "missing-" + b, String(t.id)]);
      }
    }
    const key = nodes.map((n) => n.id).join(",") + "|" + edges.map((e) => e.join(">")).join(",");
    return { nodes, edges, key };
  }

  let requested = { seq: 0, key: "" }; // the layout the worker is doing or did last
  function ensureWorker() {
    if (S.worker) return;
    S.worker = new Worker("static/layout-worker.js");
    S.worker.onmessage = (e) => {
      S.layoutBusy = false;
      const r = e.data;
      if (r.error) {
        $("graph-status").textContent = "layout failed: " + r.error;
      } else {
        S.layout = { key: requested.key, nodes: r.nodes, edges: r.edges, width: r.width, height: r.height, ms: r.ms };
        stats.layouts++;
        stats.lastLayoutMs = r.ms;
      }
      if (S.view === "graph") renderGraph();
    };
    S.worker.onerror = (e) => {
      S.layoutBusy = false;
      $("graph-status").textContent = "layout failed: " + (e.message || "worker error");
    };
  }

  function renderGraph() {
    if (!S.snap) return;
    const shape = graphShape();
    if (!S.layout || S.layout.key !== shape.key) {
      // Lay out the newest shape; a shape that changes while the worker
      // is busy is laid out once it is free.
      if (!S.layoutBusy && requested.key !== shape.key) {
        ensureWorker();
        S.layoutBusy = true;
        requested = { seq: ++S.seq, key: shape.key };
        S.worker.postMessage({ seq: requested.seq, nodes: shape.nodes, edges: shape.edges });
      }
      $("graph-status").textContent = "laying out " + shape.nodes.length + " nodes…";
      if (!S.layout) return;
    }
    drawGraph();
  }

  function fitZoom() {
    const box = $("graph-scroll");
    if (!S.layout || !S.layout.width) return 1;
    // A graph of hundreds of tasks fits the window only too small to
    // read: then Fit shows it at the least size that can be read, and the
    // window scrolls over it.
    return Math.max(wholeZoom(), READABLE_ZOOM);
  }

  // The zoom at which the whole graph fits the window.
  function wholeZoom() {
    const box = $("graph-scroll");
    return Math.min(1.25, (box.clientWidth - 8) / S.layout.width, (box.clientHeight - 8) / S.layout.height);
  }

  // Brings the frontier into view: the start of the critical path, or
  // else the first task in progress or ready.
  function scrollToFrontier(zoom) {
    const box = $("graph-scroll");
    const path = S.snap.criticalPath || [];
    const first = [...path, ...S.snap.tasks.filter((t) => t.state === "in_progress" || t.state === "ready").map((t) => t.id)]
      .find((id) => S.layout.nodes[String(id)]);
    if (first === undefined) { box.scrollTo(0, 0); return; }
    const p = S.layout.nodes[String(first)];
    box.scrollTo(Math.max(0, (p.x - p.w / 2) * zoom - 40), Math.max(0, p.y * zoom - box.clientHeight / 2));
  }

  const graphDOM = new Map(); // node id -> {g, sig}

  function graphNode(id, t, p, critical) {
    const sig = JSON.stringify(t ? [t.subject, t.state, t.owner, t.leaseLapsed, t.priority, t.strandedBy, t.reason, p.w, p.h] : [p.w, p.h]);
    let n = graphDOM.get(id);
    if (!n) {
      n = { g: svg("g", t ? { "data-id": t.id, tabindex: 0, role: "button" } : {}), sig: "" };
      graphDOM.set(id, n);
    }
    n.g.setAttribute("transform", `translate(${p.x - p.w / 2},${p.y - p.h / 2})`);
    n.g.setAttribute("class", t ? "node state-" + t.state + (t.leaseLapsed ? " is-lapsed" : "") + (critical ? " critical" : "") + (S.selected === t.id ? " selected" : "") : "node state-missing");
    if (n.sig === sig) return n.g;
    n.sig = sig;
    if (!t) {
      const tx = svg("text", { x: 10, y: 21 });
      tx.textContent = "#" + id.slice(8) + " missing";
      n.g.replaceChildren(svg("rect", { width: p.w, height: p.h, rx: 6 }), tx);
      return n.g;
    }
    const title = svg("title", {});
    title.textContent = "#" + t.id + " " + t.subject + " (" + stateLabel(t.state) + ")";
    const l1 = svg("text", { x: 14, y: 19, class: "subject" });
    l1.textContent = clip("#" + t.id + " " + t.subject, 30);
    const l2 = svg("text", { x: 14, y: 36, class: "sub" });
    let sub = stateLabel(t.state);
    if (t.owner && t.state !== "ready" && t.state !== "blocked" && t.state !== "stranded") sub += " · " + t.owner;
    if (t.state === "stranded") sub += " by #" + t.strandedBy;
    if ((t.state === "failed" || t.state === "cancelled") && t.reason) sub += ": " + t.reason;
    if (t.leaseLapsed) sub = "⚠ " + sub + " · lease lapsed";
    if (t.priority !== undefined && t.priority !== 2) sub = "P" + t.priority + " · " + sub;
    l2.textContent = clip(sub, 34);
    n.g.replaceChildren(title, svg("rect", { width: p.w, height: p.h, rx: 6 }), svg("rect", { class: "band", width: 6, height: p.h, rx: 3 }), l1, l2);
    return n.g;
  }

  function drawGraph() {
    const L = S.layout;
    const g = $("graph");
    const zoom = S.zoom || Math.max(0.05, fitZoom());
    const clamped = !S.zoom && zoom > wholeZoom() + 1e-9;
    g.setAttribute("viewBox", "0 0 " + L.width + " " + L.height);
    g.setAttribute("width", Math.ceil(L.width * zoom));
    g.setAttribute("height", Math.ceil(L.height * zoom));
    // The critical path: its nodes, and the edges between consecutive ones.
    const path = S.snap.criticalPath || [];
    const onPath = new Set(path.map(String));
    const pathEdges = new Set(path.slice(1).map((id, i) => path[i] + ">" + id));
    const edges = svg("g", { id: "edges" });
    const critical = [];
    for (const e of L.edges) {
      const to = S.byId.get(Number(e.to));
      const from = S.byId.get(Number(e.from));
      let cls = "edge";
      if (!from) cls += " missing";
      else if (from.status === "completed") cls += " done";
      else if (from.status === "failed" || from.status === "cancelled") cls += " ended";
      else if (to && to.status === "pending") cls += " waiting";
      const onCritical = pathEdges.has(e.from + ">" + e.to);
      if (onCritical) cls += " critical";
      const d = "M" + e.points.map((p) => p.x.toFixed(1) + "," + p.y.toFixed(1)).join(" L");
      const pe = svg("path", { d, class: cls, "marker-end": onCritical ? "url(#arrow-critical)" : "url(#arrow)", "data-from": e.from, "data-to": e.to });
      if (onCritical) critical.push(pe);
      else edges.append(pe);
    }
    edges.append(...critical); // drawn last, over the others
    g.replaceChild(edges, $("edges"));
    // Nodes are kept across snapshots, like the board's cards, so that a
    // click on one is never lost to a snapshot.
    const items = [];
    const seen = new Set();
    let drawn = 0;
    for (const [id, p] of Object.entries(L.nodes)) {
      const t = id.startsWith("missing-") ? null : S.byId.get(Number(id));
      if (!t && !id.startsWith("missing-")) continue; // deleted since the layout; the next layout drops it
      if (t) drawn++;
      seen.add(id);
      items.push(graphNode(id, t, p, onPath.has(id)));
    }
    for (const id of graphDOM.keys()) if (!seen.has(id)) graphDOM.delete(id);
    const layer = $("nodes");
    if (!sameChildren(layer, items)) layer.replaceChildren(...items);
    const stale = S.layout.key !== graphShape().key;
    const total = S.snap.tasks.length;
    $("graph-status").textContent = !total ? "No tasks yet." : (drawn === total ? drawn + " tasks" : drawn + " of " + total + " tasks") +
      " · critical path " + path.length + (path.length === 1 ? " task" : " tasks") +
      " · laid out in " + Math.round(L.ms) + " ms" + (clamped ? " · at a readable size: scroll, or − to see it all" : "") + (stale ? " · updating…" : "");
    if (S.wantScroll && !stale) {
      S.wantScroll = false;
      if (clamped) scrollToFrontier(zoom);
    }
    stats.layoutAt = performance.now();
    stats.layoutVersion = S.snap.version;
  }

  function setZoom(z) {
    S.zoom = z;
    if (S.layout) drawGraph();
  }

  function legend() {
    const keys = ["ready", "blocked", "stranded", "in_progress", "completed", "failed", "cancelled"];
    $("legend").replaceChildren(...keys.map((k) => el("span", { class: "pill state-" + k }, el("span", { class: "dot" }), k.replace("_", " "))),
      el("span", { class: "pill critical-key", title: "The longest chain of unfinished tasks, each blocked by the one before: the fewest steps the remaining work takes" }, "critical path"),
      el("span", { class: "pill lapsed-key" }, "⚠ lease lapsed"));
  }

  // ---- the task in full

  function link(id) {
    const t = S.byId.get(id);
    const label = t ? [el("span", { class: "id" }, "#" + id), " " + t.subject + " ", el("span", { class: "badge state-" + t.state }, stateLabel(t.state))]
      : [el("span", { class: "id" }, "#" + id), " ", el("span", { class: "badge state-missing" }, "does not exist")];
    return el("li", {}, el("a", { href: "#", "data-goto": id }, label), t && t.owner && t.state === "in_progress" ? " held by " + t.owner : "");
  }

  function why(t) {
    const now = serverNow();
    switch (t.state) {
      case "ready":
        return el("p", {}, t.blockedBy.length ? "Ready: every blocker is completed. Any agent may claim it." : "Ready: nothing blocks it. Any agent may claim it.");
      case "blocked":
      case "stranded": {
        // The store's own explanation (taskgraph.Explain), then the tasks it names.
        const out = [el("p", { class: "why" }, t.why || "Not ready.")];
        if (t.state === "stranded") out.push(el("ul", { class: "links stranded" }, link(t.strandedBy)));
        out.push(el("ul", { class: "links waiting" }, (t.waitingOn || []).filter((id) => id !== t.strandedBy).map(link)));
        return out;
      }
      case "failed":
        return el("p", {}, "Failed" + (t.owner ? " (" + t.owner + ")" : "") + ": ", el("span", { class: "reason" }, t.reason || "no reason given"),
          strandsText(t));
      case "cancelled":
        return el("p", {}, "Cancelled: ", el("span", { class: "reason" }, t.reason || "no reason given"), strandsText(t));
      case "in_progress": {
        const bits = ["Held by ", el("b", {}, t.owner || "no owner")];
        if (t.claimedAt) bits.push(" for ", el("time", { "data-since": t.claimedAt }, ago(now - Date.parse(t.claimedAt))));
        if (t.leaseExpiresAt) {
          const left = Date.parse(t.leaseExpiresAt) - now;
          bits.push(left > 0 ? ["; the lease runs ", el("time", { "data-until": t.leaseExpiresAt }, ago(left)), " more."]
            : el("span", { class: "lapsed" }, "; ⚠ the lease lapsed ", el("time", { "data-since": t.leaseExpiresAt }, ago(-left)), " ago: the owner may be gone, and anyone may claim it."));
        } else bits.push("; the claim has no lease.");
        return el("p", {}, bits);
      }
      case "completed":
        return el("p", {}, "Completed" + (t.owner ? " by " + t.owner : "") + (t.result ? ": " : "."), t.result ? el("span", { class: "result" }, t.result) : null);
      default:
        return el("p", {}, stateLabel(t.state));
    }
  }

  function strandsText(t) {
    const n = (t.strands || []).length;
    return n ? ". It strands " + n + (n === 1 ? " task, which cannot" : " tasks, which cannot") + " start until it is reopened." : ".";
  }

  function fmtTime(s) { return s ? new Date(s).toLocaleString() : ""; }

  let detailSig = "";
  function renderDetail() {
    const box = $("detail");
    if (S.selected === null) { box.hidden = true; detailSig = ""; return; }
    const t = S.byId.get(S.selected);
    if (!t) {
      detailSig = "";
      box.hidden = false;
      box.replaceChildren(el("button", { class: "close", type: "button", title: "Close", onclick: () => select(null) }, "×"),
        el("p", {}, "Task #" + S.selected + " no longer exists."));
      return;
    }
    // Rebuilt only when what it shows changed, so that its buttons keep
    // their clicks while snapshots arrive; its times tick on their own.
    const related = [...t.blockedBy, ...t.blocks, t.strandedBy || 0].map((id) => {
      const o = S.byId.get(id);
      return o ? [id, o.subject, o.state, o.owner] : [id];
    });
    const sig = JSON.stringify([t, related, S.snap.writes, !!S.token, S.detailError, (S.snap.criticalPath || []).includes(t.id)]);
    if (sig === detailSig && !box.hidden) return;
    detailSig = sig;
    const rows = [];
    const row = (k, v) => { if (v) rows.push(el("dt", {}, k), el("dd", {}, v)); };
    const onPath = (S.snap.criticalPath || []).includes(t.id);
    row("Status", t.status);
    row("Priority", "P" + (t.priority === undefined ? 2 : t.priority));
    if (t.labels && t.labels.length) row("Labels", labels(t));
    row("Key", t.key);
    row("Owner", t.owner);
    row("Previous owner", t.prevOwner);
    row("Not before", fmtTime(t.notBefore));
    row("Due", fmtTime(t.due));
    if (t.maxAttempts) row("Attempts", t.attempts + " used of " + t.maxAttempts);
    row("Claimed", fmtTime(t.claimedAt));
    row("Lease until", fmtTime(t.leaseExpiresAt));
    row("Created", fmtTime(t.createdAt));
    row("Updated", fmtTime(t.updatedAt));
    row("Rev", String(t.rev));
    const parts = [
      el("button", { class: "close", type: "button", title: "Close", onclick: () => select(null) }, "×"),
      el("h2", {}, el("span", { class: "id" }, "#" + t.id), " " + t.subject),
      el("span", { class: "badge state-" + t.state }, stateLabel(t.state)), " ",
      prio(t), onPath ? el("span", { class: "badge critical", title: "On the critical path: the longest chain of unfinished tasks" }, "critical path") : null,
      t.description ? el("p", { class: "description" }, t.description) : el("p", { class: "muted" }, "No description."),
      el("h3", {}, t.state === "blocked" || t.state === "stranded" ? "Why it is not ready" : "State"),
      ...[].concat(why(t)),
      el("dl", {}, rows),
    ];
    if (t.parent) parts.push(el("h3", {}, "Part of"), el("ul", { class: "links" }, [link(t.parent)]));
    const children = [...S.byId.values()].filter((c) => c.parent === t.id).map((c) => c.id).sort((a, b) => a - b);
    if (children.length) {
      const done = children.filter((id) => S.byId.get(id).status === "completed").length;
      parts.push(el("h3", {}, "Children: " + done + " of " + children.length + " done"), el("ul", { class: "links" }, children.map(link)));
    }
    if (t.blockedBy.length) parts.push(el("h3", {}, "Blocked by"), el("ul", { class: "links" }, t.blockedBy.map(link)));
    if (t.blocks.length) parts.push(el("h3", {}, "Blocks"), el("ul", { class: "links" }, t.blocks.map(link)));
    const strands = t.strands || [];
    if (strands.length) {
      parts.push(el("h3", {}, "Strands " + strands.length + (strands.length === 1 ? " task" : " tasks")),
        el("ul", { class: "links strands" }, strands.slice(0, 50).map(link)),
        strands.length > 50 ? el("p", { class: "muted small" }, "and " + (strands.length - 50) + " more") : null);
    }
    if (t.metadata && Object.keys(t.metadata).length) parts.push(el("h3", {}, "Metadata"), el("pre", { class: "metadata" }, JSON.stringify(t.metadata, null, 2)));
    if (t.notes && t.notes.length) {
      parts.push(el("h3", {}, "Notes, latest first"), el("ul", { class: "notes" }, t.notes.slice().reverse().map((n) =>
        el("li", {}, el("span", { class: "muted small" }, fmtTime(n.at) + " " + n.author + ": "), n.text))));
    }
    if (t.history && t.history.length) {
      parts.push(el("h3", {}, "History (latest " + t.history.length + ")"), el("ol", { class: "history" }, t.history.map((h) =>
        el("li", {}, el("span", { class: "muted small" }, fmtTime(h.at) + " "), h.event + (h.by ? " by " + h.by : "") + (h.detail ? ": " + h.detail : "")))));
    }
    parts.push(actions(t));
    // A snapshot may arrive while someone types: keep what they typed.
    const input = $("blocker-input");
    const typed = input && { value: input.value, focused: document.activeElement === input, id: box.dataset.id };
    box.replaceChildren(...parts.filter((p) => p !== null));
    box.dataset.id = t.id;
    const again = $("blocker-input");
    if (typed && again && typed.id === String(t.id)) {
      again.value = typed.value;
      if (typed.focused) again.focus();
    }
    box.hidden = false;
  }

  function actions(t) {
    if (!S.snap.writes) return el("p", { class: "muted small" }, "Read-only: start taskgraph serve with --allow-writes to change tasks here.");
    if (!S.token) return el("p", { class: "muted small" }, "Writes are allowed, but this page has no token: open the URL that taskgraph serve printed.");
    const out = el("div", { class: "actions" }, el("h3", {}, "Actions"));
    if (t.status === "in_progress") {
      out.append(el("button", {
        type: "button", id: "action-release", class: "danger",
        title: "Give the task back: it becomes pending, and any agent may claim it",
        onclick: (e) => act(e.target, "api/tasks/" + t.id + "/release", { owner: t.owner }, "Released #" + t.id),
      }, "Release claim" + (t.owner ? " of " + t.owner : "")));
    }
    if (t.status === "completed" || t.status === "failed" || t.status === "cancelled") {
      out.append(el("button", {
        type: "button", id: "action-reopen",
        title: t.status === "completed" ? "Move the task back to pending" : "Move the task back to pending, clearing its reason: the tasks it strands can start once it is done",
        onclick: (e) => act(e.target, "api/tasks/" + t.id + "/reopen", { rev: t.rev }, "Reopened #" + t.id),
      }, "Reopen"));
    }
    const input = el("input", { id: "blocker-input", placeholder: "task id", inputmode: "numeric", size: 8 });
    out.append(el("form", {
      class: "inline", onsubmit: (e) => {
        e.preventDefault();
        const ids = parseIDs(input.value);
        if (ids.error || ids.length !== 1) { showDetailError(ids.error || "Give one task id."); return; }
        act(e.submitter || e.target.querySelector("button"), "api/tasks/" + t.id + "/blockers", { blocker: ids[0] }, "#" + t.id + " is now blocked by #" + ids[0]);
      },
    }, el("label", {}, "Blocked by ", input), el("button", { type: "submit", id: "action-add-blocker" }, "Add edge")));
    out.append(el("p", { class: "error", id: "detail-error" }, S.detailError));
    return out;
  }

  function showDetailError(msg) {
    S.detailError = msg;
    const e = $("detail-error");
    if (e) e.textContent = msg;
  }

  async function act(button, path, body, ok) {
    button.disabled = true;
    showDetailError("");
    try {
      await post(path, body);
      toast(ok);
    } catch (err) {
      showDetailError(err.message);
      toast(err.message, true);
    } finally {
      button.disabled = false;
    }
  }

  function parseIDs(text) {
    const out = [];
    for (const f of text.split(/[\s,]+/).filter(Boolean)) {
      if (!/^#?\d+$/.test(f)) return { error: JSON.stringify(f) + " is not a task id" };
      const n = Number(f.replace("#", ""));
      if (!Number.isSafeInteger(n)) return { error: f + " is too large for a task id" };
      out.push(n);
    }
    return out;
  }

  function select(id) {
    if (id !== S.selected) S.detailError = "";
    S.selected = id;
    for (const e of document.querySelectorAll(".selected")) e.classList.remove("selected");
    if (id !== null) for (const e of document.querySelectorAll(`[data-id="${id}"]`)) e.classList.add("selected");
    renderDetail();
    if (S.view === "graph" && S.layout && !S.zoom) drawGraph(); // the panel changed the room there is
  }

  // ---- creating a task

  function openCreate() {
    $("create-error").textContent = "";
    $("create-form").reset();
    $("create-dialog").showModal();
  }

  async function submitCreate(e) {
    e.preventDefault();
    const f = $("create-form");
    const ids = parseIDs(f.blockedBy.value);
    if (ids.error) { $("create-error").textContent = ids.error; return; }
    const button = $("create-submit");
    button.disabled = true;
    try {
      const t = await post("api/tasks", { subject: f.subject.value, description: f.description.value, blockedBy: ids });
      $("create-dialog").close();
      toast("Created #" + t.id);
      select(t.id);
    } catch (err) {
      $("create-error").textContent = err.message;
    } finally {
      button.disabled = false;
    }
  }

  // ---- views and wiring

  function showView() {
    S.view = location.hash === "#graph" ? "graph" : "board";
    $("board-view").hidden = S.view !== "board";
    $("graph-view").hidden = S.view !== "graph";
    $("tab-board").classList.toggle("active", S.view === "board");
    $("tab-graph").classList.toggle("active", S.view === "graph");
    if (!S.snap) return;
    if (S.view === "graph") S.wantScroll = true;
    if (S.view === "board") renderBoard();
    else renderGraph();
  }

  function tick() {
    const now = serverNow();
    for (const e of document.querySelectorAll("time[data-since]")) e.textContent = ago(now - Date.parse(e.dataset.since));
    for (const e of document.querySelectorAll("time[data-until]")) {
      const left = Date.parse(e.dataset.until) - now;
      e.textContent = ago(Math.max(0, left));
    }
  }

  function onClick(e) {
    const go = e.target.closest("[data-goto]");
    if (go) { e.preventDefault(); select(Number(go.dataset.goto)); return; }
    const card = e.target.closest("[data-id]");
    if (card && (card.closest("#columns") || card.closest("#nodes"))) select(Number(card.dataset.id));
  }

  function init() {
    readToken();
    window.addEventListener("hashchange", showView);
    document.addEventListener("click", onClick);
    document.addEventListener("keydown", (e) => {
      if (e.key === "/" && !/^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName) && !$("create-dialog").open) { e.preventDefault(); $("search").focus(); return; }
      if (e.key === "Escape" && e.target === $("search") && S.filter.text) { $("search").value = ""; S.filter.text = ""; refilter(); return; }
      if (e.key === "Escape" && !$("create-dialog").open) select(null);
      if (e.key === "Enter" && e.target.dataset && e.target.dataset.id) select(Number(e.target.dataset.id));
    });
    $("zoom-in").addEventListener("click", () => setZoom((S.zoom || fitZoom()) * 1.25));
    $("zoom-out").addEventListener("click", () => setZoom((S.zoom || fitZoom()) / 1.25));
    $("zoom-fit").addEventListener("click", () => { S.wantScroll = true; setZoom(null); });
    window.addEventListener("resize", () => { if (S.view === "graph" && S.layout && !S.zoom) drawGraph(); });
    $("new-task").addEventListener("click", openCreate);
    loadFilters();
    $("search").addEventListener("input", (e) => { S.filter.text = e.target.value; refilter(); });
    $("filter-label").addEventListener("change", (e) => { S.filter.label = e.target.value; refilter(); });
    $("filter-owner").addEventListener("change", (e) => { S.filter.owner = e.target.value; refilter(); });
    $("filter-state").addEventListener("change", (e) => setStateFilter(e.target.value));
    $("hide-completed").addEventListener("change", (e) => setHideCompleted(e.target.checked));
    $("clear-filters").addEventListener("click", clearFilters);
    $("create-cancel").addEventListener("click", () => $("create-dialog").close());
    $("create-form").addEventListener("submit", submitCreate);
    legend();
    showView();
    connect();
    setInterval(tick, 1000);
  }

  init();
})();
