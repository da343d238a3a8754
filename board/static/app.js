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
    children: new Map(), // task id -> its children's ids
    rollups: new Map(), // epic id -> its rollup
    collapse: null, // the person's choice for epics; null: collapsed when the graph is too big to read whole
    focus: null, // null, {path: true}, or {id}: the graph shows only that
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
      feed.reset();
      feed.add(snap.tasks, false);
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
      feed.add(c.tasks, true);
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
    family();
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
        const end = claimEnd(t);
        if (end) {
          const left = Date.parse(end.at) - now;
          if (left <= 0) bits.push(el("span", { class: "lapsed", title: "The claim has lapsed (" + end.what + "): anyone may claim this task" }, " · ⚠ " + end.what + " lapsed ", el("time", { "data-since": end.at }, ago(-left)), " ago"));
          else bits.push(" · " + end.what + " ", el("time", { "data-until": end.at }, ago(left)), " left");
        }
        return bits;
      }
      case "blocked": {
        const bits = [ids("waiting on", t.waitingOn || [])];
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
        if (t.blocks.length) return [ids("unblocks", t.blocks)];
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
      t.priority, t.labels, t.reason, t.result, t.strandedBy, t.strands, c0 && [c0.subject, c0.state], S.rollups && S.rollups.get(t.id), lapsed(t)]);
    let c = boardDOM.cards.get(t.id);
    if (!c) {
      c = { li: el("li", { "data-id": t.id, tabindex: 0 }), sig: "" };
      boardDOM.cards.set(t.id, c);
    }
    if (c.sig !== sig) {
      c.sig = sig;
      const tags = labels(t);
      c.li.replaceChildren(el("div", { class: "card-title" }, prio(t), el("span", { class: "id" }, "#" + t.id), " ", t.subject),
        el("div", { class: "card-meta" }, cardMeta(t)), ...(progress(t) || []),
        ...(tags.length ? [el("div", { class: "labels" }, tags)] : []));
    }
    c.li.className = "card state-" + t.state + (t.leaseLapsed || lapsed(t) ? " is-lapsed" : "") + (S.selected === t.id ? " selected" : "");
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
      parts.push(el("p", { class: "small" }, S.snap.writes ? "This page has no token: open it again with #token=TOKEN after its address, TOKEN printed by taskgraph token add NAME, to add tasks here."
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
    const widths = [];
    for (const c of snap.columns) {
      const col = boardDOM.cols.get(c.key);
      col.section.hidden = !!S.filter.state && S.filter.state !== c.key;
      // An empty column is a narrow slot: every column stays in the window.
      const narrow = !c.ids.length && S.filter.state !== c.key;
      col.section.classList.toggle("narrow", narrow);
      if (!col.section.hidden) widths.push(narrow ? "34px" : "minmax(0, 1fr)");
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
    $("columns").style.gridTemplateColumns = widths.join(" ");
    for (const id of boardDOM.cards.keys()) if (!seen.has(id)) boardDOM.cards.delete(id);
    renderAttention();
    renderLanes();
    renderFeed();
  }

  // ---- epics: a task with children shows how far they have come

  // family indexes each task's children (Task.parent) and each epic's
  // rollup, as taskgraph.RollupOf counts it: done, failed, cancelled,
  // stranded, of all its children.
  function family() {
    const kids = new Map();
    for (const t of S.snap.tasks) {
      if (!t.parent || t.parent === t.id) continue;
      if (!kids.has(t.parent)) kids.set(t.parent, []);
      kids.get(t.parent).push(t.id);
    }
    S.children = kids;
    S.rollups = new Map();
    for (const [id, ids] of kids) {
      const r = { total: ids.length, done: 0, failed: 0, cancelled: 0, stranded: 0 };
      for (const k of ids) {
        const c = S.byId.get(k);
        if (c.status === "completed") r.done++;
        else if (c.status === "failed") r.failed++;
        else if (c.status === "cancelled") r.cancelled++;
        else if (c.strandedBy) r.stranded++;
      }
      S.rollups.set(id, r);
    }
  }

  // rollupText is taskgraph.Rollup's String: "3 of 5 done, 1 failed".
  function rollupText(r) {
    let s = r.done + " of " + r.total + " done";
    for (const [n, what] of [[r.failed, "failed"], [r.cancelled, "cancelled"], [r.stranded, "stranded"]]) if (n) s += ", " + n + " " + what;
    return s;
  }

  function progress(t) {
    const r = S.rollups && S.rollups.get(t.id);
    if (!r) return null;
    const done = el("span", { class: "done" }), failed = el("span", { class: "failed" });
    done.style.width = (100 * r.done / r.total) + "%";
    failed.style.width = (100 * (r.failed + r.cancelled) / r.total) + "%";
    return [el("div", { class: "progress", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": r.total, "aria-valuenow": r.done,
      "data-done": r.done, "data-total": r.total, title: rollupText(r) }, done, failed),
    el("div", { class: "progress-text" }, rollupText(r))];
  }

  // ids shows a list of task ids, folded to a count past a few: the
  // list is one click away.
  function ids(prefix, list) {
    const text = list.map((id) => "#" + id).join(", ");
    if (list.length <= 4) return prefix + " " + text;
    return el("details", { class: "ids" }, el("summary", {}, prefix + " " + list.length + " tasks"), text);
  }

  // ---- needs attention: what a person watching the agents acts on first

  function lapsed(t) {
    const end = claimEnd(t);
    return t.state === "in_progress" && !!end && Date.parse(end.at) <= serverNow();
  }

  // claimEnd says which clock ends a claim, and when: the max runtime or
  // the no-progress window when one runs out before the lease (the
  // server sends lapsesAt and clock then), else the lease; null if none.
  function claimEnd(t) {
    if (t.lapsesAt) return { at: t.lapsesAt, what: t.clock === "runtime" ? "max runtime" : "no-progress window" };
    return t.leaseExpiresAt ? { at: t.leaseExpiresAt, what: "lease" } : null;
  }

  function overdue(t) {
    return !!t.due && Date.parse(t.due) < serverNow() && (t.status === "pending" || t.status === "in_progress");
  }

  let attentionSig = "";
  function renderAttention() {
    const groups = [
      ["failed", "Failed", S.snap.tasks.filter((t) => t.state === "failed")],
      ["lapsed", "Lease lapsed", S.snap.tasks.filter(lapsed)],
      ["stranded", "Stranded", S.snap.tasks.filter((t) => t.state === "stranded")],
      ["overdue", "Overdue", S.snap.tasks.filter(overdue)],
      // Once the liveness issue lands: tasks awaiting approval, and claims
      // out of progress, each one more group here.
    ].filter((g) => g[2].length);
    const sig = JSON.stringify(groups.map((g) => [g[0], g[2].map((t) => [t.id, t.subject])]));
    const box = $("attention");
    box.hidden = S.snap.tasks.length === 0;
    if (sig === attentionSig) return;
    attentionSig = sig;
    box.className = groups.length ? "" : "calm";
    if (!groups.length) { box.replaceChildren(el("span", { class: "attn-title" }, "Nothing needs attention: no failures, lapsed leases, stranded or overdue tasks.")); return; }
    const most = 4; // per group: the strip stays a line or two; the rest is a count
    box.replaceChildren(el("span", { class: "attn-title" }, "Needs attention"), ...groups.map(([key, title, list]) =>
      el("span", { class: "attn-group attn-" + key + " state-" + key, "data-group": key }, el("b", {}, title + " " + list.length),
        list.slice(0, most).map((t) => el("a", { class: "chip", href: "#", "data-goto": t.id, "data-attn": key, title: "#" + t.id + " " + t.subject + (t.reason ? ": " + t.reason : "") },
          "#" + t.id + " " + clip(t.subject, 24))),
        list.length > most ? el("span", { class: "muted small" }, "+" + (list.length - most) + " more") : null)));
  }

  // ---- a lane per agent: what it holds, its last note, when it last
  // renewed or made progress

  let lanesSig = "";
  function renderLanes() {
    const agents = new Map();
    for (const t of S.snap.tasks) {
      if (t.state !== "in_progress" || !t.owner) continue;
      if (!agents.has(t.owner)) agents.set(t.owner, { held: [], last: 0, note: null });
      const a = agents.get(t.owner);
      a.held.push(t);
      a.last = Math.max(a.last, Date.parse(t.updatedAt || t.claimedAt || 0) || 0, Date.parse(t.claimedAt || 0) || 0);
    }
    for (const t of S.snap.tasks) {
      for (const n of t.notes || []) {
        const a = agents.get(n.author);
        if (!a) continue;
        const at = Date.parse(n.at);
        if (!a.note || at > a.note.at) a.note = { at, text: n.text, id: t.id };
        a.last = Math.max(a.last, at);
      }
    }
    const names = [...agents.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    const sig = JSON.stringify(names.map((n) => [n, agents.get(n).held.map((t) => [t.id, t.subject, t.leaseExpiresAt]), agents.get(n).note, agents.get(n).last]));
    $("lanes").querySelector("h2").textContent = "Agents " + names.length;
    if (sig === lanesSig) return;
    lanesSig = sig;
    $("lane-list").replaceChildren(...(names.length ? names.map((name) => {
      const a = agents.get(name);
      const anyLapsed = a.held.some(lapsed);
      return el("li", { class: "lane" + (anyLapsed ? " is-lapsed" : ""), "data-agent": name },
        el("div", { class: "agent" }, name, el("span", { class: "muted" }, " · active ", el("time", { "data-since": new Date(a.last).toISOString() }, ago(serverNow() - a.last)), " ago")),
        a.held.map((t) => el("div", { class: "held", "data-held": t.id }, el("a", { href: "#", "data-goto": t.id }, "#" + t.id + " " + clip(t.subject, 38)),
          claimEnd(t) ? (lapsed(t) ? el("span", { class: "lapsed" }, " · ⚠ " + claimEnd(t).what + " lapsed")
            : [" · " + claimEnd(t).what + " ", el("time", { "data-until": claimEnd(t).at }, ago(Date.parse(claimEnd(t).at) - serverNow())), " left"]) : null)),
        a.note ? el("div", { class: "note" }, "“" + clip(a.note.text, 90) + "” on #" + a.note.id) : null);
    }) : [el("li", { class: "lane muted" }, "No agent holds a task.")]));
  }

  // ---- activity: the tasks' history, newest first, live

  const FEED_MAX = 200, FEED_SHOWN = 60;
  const feed = {
    keys: new Set(), items: [],
    reset() { this.keys.clear(); this.items = []; },
    // add takes in the history of tasks; fresh marks what arrived live.
    add(tasks, fresh) {
      let added = false;
      for (const t of tasks) {
        for (const h of t.history || []) {
          if (h.event === "earlier" || h.event === "created" && !fresh) continue;
          const key = t.id + "|" + h.at + "|" + h.event + "|" + (h.by || "");
          if (this.keys.has(key)) continue;
          this.keys.add(key);
          let detail = h.detail || "";
          if (h.event === "noted") {
            const n = (t.notes || []).find((n) => n.at === h.at);
            if (n) detail = n.text;
          }
          this.items.push({ key, at: Date.parse(h.at), id: t.id, event: h.event, by: h.by || "", detail, fresh: fresh ? Date.now() : 0 });
          added = true;
        }
      }
      if (!added) return;
      this.items.sort((a, b) => b.at - a.at);
      for (const gone of this.items.splice(FEED_MAX)) this.keys.delete(gone.key);
    },
  };

  let feedSig = "";
  function renderFeed() {
    const shown = feed.items.slice(0, FEED_SHOWN);
    const sig = shown.map((i) => i.key + (S.byId.get(i.id) || {}).subject).join(",");
    if (sig === feedSig) return;
    feedSig = sig;
    $("feed-list").replaceChildren(...(shown.length ? shown.map((i) => {
      const t = S.byId.get(i.id);
      const verb = { claimed: "claimed", released: "released", failed: "failed", completed: "completed", cancelled: "cancelled",
        reopened: "reopened", edited: "edited", noted: "noted on", lapsed: "took over (lease lapsed)", created: "created",
        approved: "approved", rejected: "rejected" }[i.event] || i.event;
      return el("li", { class: "feed-item" + (i.fresh && Date.now() - i.fresh < 10000 ? " fresh" : ""), "data-id": i.id, "data-event": i.event },
        el("time", { "data-since": new Date(i.at).toISOString(), class: "muted" }, ago(serverNow() - i.at)), " ago · ",
        i.by ? el("b", {}, i.by + " ") : null, el("span", { class: "ev-" + i.event }, verb), " ",
        el("a", { href: "#", "data-goto": i.id }, "#" + i.id + (t ? " " + clip(t.subject, 40) : "")),
        i.detail && i.event !== "claimed" ? el("span", { class: "muted" }, ": " + clip(i.detail, 80)) : null);
    }) : [el("li", { class: "feed-item muted" }, "Nothing has happened yet.")]));
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
    S.autoCollapse = S.autoCompact = false; // the graph may be small enough to read now
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

  // The least font size, in screen pixels, at which a node's label is
  // drawn: below it Fit collapses epics, and past that draws boxes only.
  const READABLE_PX = 10, LABEL_PX = 12;
  // readable reports whether a label of px pixels at zoom can be read, to
  // a tenth of a pixel: a page whose header grew by two pixels (one more
  // state in the counts) must not drop every label of a graph that fitted
  // at 9.96 px.
  const readable = (px, zoom) => Math.round(px * zoom * 10) >= READABLE_PX * 10;
  // The size of a node in an overview, with epics collapsed: smaller, so
  // that more of the graph fits the window at a size that can be read.
  const EPIC_W = 160, EPIC_H = 46, OVERVIEW_LABEL_PX = 15;

  // collapsing reports whether epics are drawn as one node each: as the
  // person chose, or else when the graph is too big to read whole.
  function collapsing() {
    if (S.collapse !== null) return S.collapse;
    return S.autoCollapse === true;
  }

  // The node a task is drawn as: itself, or the outermost collapsed epic
  // it is part of.
  function nodeOf(t, collapsed) {
    if (!collapsed) return t.id;
    let top = t.id, seen = 0;
    for (let p = t.parent; p && seen < 64; seen++) {
      const pt = S.byId.get(p);
      if (!pt) break;
      if (S.children.has(p) && S.visible.has(p)) top = p;
      p = pt.parent;
    }
    return top;
  }

  // focusSet returns the ids the focus keeps: the critical path, or a
  // task with what it waits on and what waits on it, two steps each way,
  // its parent and its children; null for no focus.
  function focusSet() {
    const f = S.focus;
    if (!f) return null;
    if (f.path) return new Set(S.snap.criticalPath || []);
    const keep = new Set([f.id]);
    const t0 = S.byId.get(f.id);
    if (!t0) return keep;
    for (const dir of ["blockedBy", "blocks"]) {
      let ring = [f.id];
      for (let step = 0; step < 2; step++) {
        const next = [];
        for (const id of ring) {
          // Not on through an epic: what it waits on is its whole work.
          if (id !== f.id && S.children.has(id)) continue;
          for (const o of (S.byId.get(id) || {})[dir] || []) if (!keep.has(o) && S.byId.has(o)) { keep.add(o); next.push(o); }
        }
        ring = next;
      }
    }
    if (t0.parent && S.byId.has(t0.parent)) keep.add(t0.parent);
    for (const k of S.children.get(f.id) || []) keep.add(k);
    return keep;
  }

  function graphShape() {
    // The tasks the filters (and the focus) let through, and the edges
    // between them; with epics collapsed, each epic's tasks are one node.
    const nodes = [], edges = [], ghosts = new Set(), seenNode = new Set(), seenEdge = new Set();
    const focus = focusSet();
    const shown = (id) => S.visible.has(id) && (!focus || focus.has(id));
    const collapsed = collapsing() && !focus;
    const compact = collapsed || !!focus || S.autoCompact === true; // an overview, or a focus: packed, with larger labels
    for (const t of S.snap.tasks) {
      if (!shown(t.id)) continue;
      const me = nodeOf(t, collapsed);
      if (!seenNode.has(me)) { seenNode.add(me); nodes.push({ id: String(me), w: compact ? EPIC_W : NODE_W, h: compact ? EPIC_H : NODE_H }); }
      for (const b of t.blockedBy) {
        const bt = S.byId.get(b);
        if (bt && !shown(b)) continue;
        if (!bt && !ghosts.has(b)) {
          ghosts.add(b);
          nodes.push({ id: "missing-" + b, w: 110, h: 34 });
        }
        const from = bt ? String(nodeOf(bt, collapsed)) : "missing-" + b;
        if (from === String(me) || seenEdge.has(from + ">" + me)) continue;
        seenEdge.add(from + ">" + me);
        edges.push([from, String(me)]);
      }
    }
    const key = (collapsed ? "c:" : compact ? "f:" : "") + nodes.map((n) => n.id).join(",") + "|" + edges.map((e) => e.join(">")).join(",");
    return { nodes, edges, key, collapsed, compact };
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
        S.layout = { key: requested.key, nodes: r.nodes, edges: r.edges, width: r.width, height: r.height, ms: r.ms, collapsed: requested.key.startsWith("c:"), overview: /^[cf]:/.test(requested.key) };
        stats.layouts++;
        stats.lastLayoutMs = r.ms;
        stats.layoutSize = [r.width, r.height, Object.keys(r.nodes).length];
      }
      if (S.view === "graph") renderGraph();
    };
    S.worker.onerror = (e) => {
      S.layoutBusy = false;
      $("graph-status").textContent = "layout failed: " + (e.message || "worker error");
    };
  }

  // pathLayout lays the critical path out in rows that fill the window,
  // each row the way the one before ended, as a person reads a chain.
  function pathLayout(shape) {
    const [roomW, roomH] = graphRoom();
    const W = EPIC_W, H = EPIC_H, gapX = 30, gapY = 24, margin = 12;
    const ids = (S.snap.criticalPath || []).map(String).filter((id) => shape.nodes.some((n) => n.id === id));
    const size = (per) => [2 * margin + Math.min(ids.length, per) * (W + gapX) - gapX, 2 * margin + Math.ceil(ids.length / per) * (H + gapY) - gapY];
    // As many to a row as makes the whole path largest in the window.
    let perRow = 1, best = 0;
    for (let per = 1; per <= Math.max(1, ids.length); per++) {
      const [w, h] = size(per);
      const z = Math.min(roomW / w, roomH / h);
      if (z > best) { best = z; perRow = per; }
    }
    const nodes = {}, edges = [];
    ids.forEach((id, i) => {
      const row = Math.floor(i / perRow), k = i % perRow, col = row % 2 ? perRow - 1 - k : k;
      nodes[id] = { x: margin + col * (W + gapX) + W / 2, y: margin + row * (H + gapY) + H / 2, w: W, h: H };
    });
    for (let i = 1; i < ids.length; i++) {
      const a = nodes[ids[i - 1]], b = nodes[ids[i]];
      const points = a.y === b.y ? [{ x: a.x + Math.sign(b.x - a.x) * a.w / 2, y: a.y }, { x: b.x - Math.sign(b.x - a.x) * b.w / 2, y: b.y }]
        : [{ x: a.x, y: a.y + a.h / 2 }, { x: b.x, y: b.y - b.h / 2 }];
      edges.push({ from: ids[i - 1], to: ids[i], points });
    }
    const [width, height] = size(perRow);
    return { key: shape.key, nodes, edges, width, height, ms: 0, collapsed: false, overview: true };
  }

  function renderGraph() {
    if (!S.snap) return;
    const shape = graphShape();
    if (S.focus && S.focus.path) {
      if (!S.layout || S.layout.key !== shape.key) S.layout = pathLayout(shape);
      drawGraph();
      return;
    }
    if (!S.layout || S.layout.key !== shape.key) {
      // Lay out the newest shape; a shape that changes while the worker
      // is busy is laid out once it is free.
      if (!S.layoutBusy && requested.key !== shape.key) {
        ensureWorker();
        S.layoutBusy = true;
        requested = { seq: ++S.seq, key: shape.key };
        S.worker.postMessage({ seq: requested.seq, nodes: shape.nodes, edges: shape.edges, compact: shape.compact });
      }
      $("graph-status").textContent = "laying out " + shape.nodes.length + " nodes…";
      if (!S.layout) return;
    }
    drawGraph();
  }

  // Fit shows every node the graph draws inside the window.
  function fitZoom() {
    if (!S.layout || !S.layout.width) return 1;
    return wholeZoom();
  }

  // The zoom at which the whole graph fits the window.
  function wholeZoom() {
    const [w, h] = graphRoom();
    return Math.min(1.25, w / S.layout.width, h / S.layout.height);
  }

  // graphRoom is the room the graph has in the window, inside the padding.
  function graphRoom() {
    const box = $("graph-scroll"), cs = getComputedStyle(box);
    return [box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 4,
      box.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) - 4];
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

  function graphNode(id, t, p, critical, group) {
    const r = group ? S.rollups.get(t.id) : null;
    const sig = JSON.stringify(t ? [t.subject, t.state, t.owner, t.leaseLapsed, t.priority, t.strandedBy, t.reason, p.w, p.h, r] : [p.w, p.h]);
    let n = graphDOM.get(id);
    if (!n) {
      n = { g: svg("g", t ? { "data-id": t.id, tabindex: 0, role: "button" } : {}), sig: "" };
      graphDOM.set(id, n);
    }
    n.g.setAttribute("transform", `translate(${p.x - p.w / 2},${p.y - p.h / 2})`);
    n.g.setAttribute("class", t ? "node state-" + t.state + (t.leaseLapsed ? " is-lapsed" : "") + (critical ? " critical" : "") + (S.selected === t.id ? " selected" : "") + (r ? " epic" : "") : "node state-missing");
    if (t) n.g.dataset.epic = r ? r.total : "";
    if (n.sig === sig) return n.g;
    n.sig = sig;
    if (!t) {
      const tx = svg("text", { x: 10, y: 21 });
      tx.textContent = "#" + id.slice(8) + " missing";
      n.g.replaceChildren(svg("rect", { width: p.w, height: p.h, rx: 6 }), tx);
      return n.g;
    }
    const title = svg("title", {});
    title.textContent = "#" + t.id + " " + t.subject + " (" + stateLabel(t.state) + ")" + (r ? ": " + rollupText(r) : "");
    const big = p.w === EPIC_W;
    const l1 = svg("text", { x: 14, y: big ? 20 : 19, class: "subject" });
    l1.textContent = clip("#" + t.id + " " + t.subject, big ? Math.floor((p.w - 22) / 8.6) : 30);
    const l2 = svg("text", { x: 14, y: big ? 39 : 36, class: "sub" });
    let sub = stateLabel(t.state);
    if (t.owner && t.state !== "ready" && t.state !== "blocked" && t.state !== "stranded") sub += " · " + t.owner;
    if (t.state === "stranded") sub += " by #" + t.strandedBy;
    if ((t.state === "failed" || t.state === "cancelled") && t.reason) sub += ": " + t.reason;
    if (t.leaseLapsed) sub = "⚠ " + sub + " · lease lapsed";
    if (t.priority !== undefined && t.priority !== 2) sub = "P" + t.priority + " · " + sub;
    if (r) sub = "▸ " + r.total + " tasks · " + r.done + " done" + (r.failed ? " · " + r.failed + " failed" : "");
    l2.textContent = clip(sub, big ? Math.floor((p.w - 22) / 7.2) : 34);
    n.g.replaceChildren(title, svg("rect", { width: p.w, height: p.h, rx: 6 }), svg("rect", { class: "band", width: 6, height: p.h, rx: 3 }), l1, l2);
    return n.g;
  }

  function drawGraph() {
    const L = S.layout;
    const g = $("graph");
    const zoom = S.zoom || Math.max(0.01, fitZoom());
    // Too small to read: at Fit, collapse the epics (once, unless the
    // person chose), or else lay the graph out packed, with larger labels;
    // past that, draw boxes without their labels.
    if (!S.zoom && !L.overview && !readable(LABEL_PX, zoom)) {
      let again = false;
      if (S.collapse === null && !S.autoCollapse && !S.focus && S.children.size) again = S.autoCollapse = true;
      else if (!S.autoCompact) again = S.autoCompact = true; // no epics to collapse: packed, with larger labels
      if (again) {
        renderGraph();
        return;
      }
    }
    const tiny = !readable(L.overview ? OVERVIEW_LABEL_PX : LABEL_PX, zoom);
    g.classList.toggle("tiny", tiny);
    g.classList.toggle("overview", !!L.overview);
    $("collapse-epics").checked = collapsing();
    $("focus-clear").hidden = !S.focus;
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
      const group = !!t && S.layout.collapsed && S.children.has(t.id);
      if (t) drawn += group ? 1 + countUnder(t.id) : 1;
      seen.add(id);
      items.push(graphNode(id, t, p, onPath.has(id), group));
    }
    for (const id of graphDOM.keys()) if (!seen.has(id)) graphDOM.delete(id);
    const layer = $("nodes");
    if (!sameChildren(layer, items)) layer.replaceChildren(...items);
    const stale = S.layout.key !== graphShape().key;
    const total = S.snap.tasks.length;
    $("graph-status").textContent = !total ? "No tasks yet." : (drawn === total ? drawn + " tasks" : drawn + " of " + total + " tasks") +
      (S.layout.collapsed ? " in " + items.length + " nodes, epics collapsed" : "") +
      (S.focus ? (S.focus.path ? " · the critical path only" : " · around #" + S.focus.id) : "") +
      " · critical path " + path.length + (path.length === 1 ? " task" : " tasks") +
      " · laid out in " + Math.round(L.ms) + " ms" + (tiny ? " · too small to label: zoom in, collapse epics or focus" : "") + (stale ? " · updating…" : "");
    if (S.wantScroll && !stale) {
      S.wantScroll = false;
      if (S.zoom) scrollToFrontier(zoom);
      else $("graph-scroll").scrollTo(0, 0);
    }
    stats.layoutAt = performance.now();
    stats.layoutVersion = S.snap.version;
  }

  // countUnder counts the tasks under epic id, its children's children
  // included, that the filters let through.
  function countUnder(id) {
    let n = 0;
    const stack = [...(S.children.get(id) || [])];
    for (let guard = 0; stack.length && guard < 1e6; guard++) {
      const k = stack.pop();
      if (S.visible.has(k)) n++;
      stack.push(...(S.children.get(k) || []));
    }
    return n;
  }

  function setFocus(f) {
    S.focus = f;
    S.autoCollapse = S.autoCompact = false;
    S.zoom = null;
    S.wantScroll = true;
    if (S.view !== "graph") location.hash = "#graph";
    else renderGraph();
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
        const end = claimEnd(t);
        if (end) {
          const left = Date.parse(end.at) - now;
          bits.push(left > 0 ? ["; the " + end.what + " runs ", el("time", { "data-until": end.at }, ago(left)), " more."]
            : el("span", { class: "lapsed" }, "; ⚠ the " + end.what + " ran out ", el("time", { "data-since": end.at }, ago(-left)), " ago: the owner may be gone or stuck, and anyone may claim it."));
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
  function fmtDuration(ns) { return ago(ns / 1e6); } // a duration in nanoseconds, as the server sends it

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
    if (t.maxRuntime) row("Max runtime", fmtDuration(t.maxRuntime));
    if (t.progressWindow) row("No-progress window", fmtDuration(t.progressWindow));
    if (t.lapsesAt) row("Claim ends", fmtTime(t.lapsesAt) + " (" + claimEnd(t).what + ")");
    row("Created", fmtTime(t.createdAt));
    row("Updated", fmtTime(t.updatedAt));
    row("Rev", String(t.rev));
    const parts = [
      el("button", { class: "close", type: "button", title: "Close", onclick: () => select(null) }, "×"),
      el("h2", {}, el("span", { class: "id" }, "#" + t.id), " " + t.subject),
      el("span", { class: "badge state-" + t.state }, stateLabel(t.state)), " ",
      prio(t), onPath ? el("span", { class: "badge critical", title: "On the critical path: the longest chain of unfinished tasks" }, "critical path") : null,
      el("button", { type: "button", id: "action-focus", class: "small", title: "Show this task in the graph with what it waits on and what waits on it",
        onclick: () => setFocus({ id: t.id }) }, "Focus in graph"),
      t.description ? el("p", { class: "description" }, t.description) : el("p", { class: "muted" }, "No description."),
      el("h3", {}, t.state === "blocked" || t.state === "stranded" ? "Why it is not ready" : "State"),
      ...[].concat(why(t)),
      el("dl", {}, rows),
    ];
    if (t.parent) parts.push(el("h3", {}, "Part of"), el("ul", { class: "links" }, [link(t.parent)]));
    const children = [...S.byId.values()].filter((c) => c.parent === t.id).map((c) => c.id).sort((a, b) => a - b);
    if (children.length) {
      const done = children.filter((id) => S.byId.get(id).status === "completed").length;
      parts.push(el("h3", {}, "Children: " + done + " of " + children.length + " done"), ...(progress(t) || []), el("ul", { class: "links" }, children.map(link)));
    }
    if (t.blockedBy.length) parts.push(el("h3", {}, "Blocked by"), el("ul", { class: "links" }, t.blockedBy.map(link)));
    if (t.blocks.length) parts.push(el("h3", {}, "Blocks"), el("ul", { class: "links" }, t.blocks.map(link)));
    const strands = t.strands || [];
    if (strands.length) {
      parts.push(el("h3", {}, "Strands " + strands.length + (strands.length === 1 ? " task" : " tasks")),
        el("ul", { class: "links strands" }, strands.slice(0, 50).map(link)),
        strands.length > 50 ? el("p", { class: "muted small" }, "and " + (strands.length - 50) + " more") : null);
    }
    if (t.links && t.links.length) {
      parts.push(el("h3", {}, "Links"), el("ul", { class: "task-links" }, t.links.map((l) =>
        el("li", {}, /^https?:\/\//.test(l.ref) ? el("a", { href: l.ref, rel: "noopener noreferrer", target: "_blank" }, l.ref) : el("code", {}, l.ref),
          el("span", { class: "muted small" }, " " + fmtTime(l.at))))));
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
    if (!S.token) return el("p", { class: "muted small" }, "Writes are allowed, but this page has no token: open it again with #token=TOKEN after its address, TOKEN printed by taskgraph token add NAME (--role admin to reopen tasks).");
    const out = el("div", { class: "actions" }, el("h3", {}, "Actions"));
    if (t.status === "in_progress") {
      out.append(el("button", {
        type: "button", id: "action-release", class: "danger",
        title: "Give the task back: it becomes pending, and any agent may claim it",
        onclick: (e) => act(e.target, "api/tasks/" + t.id + "/release", { owner: t.owner }, "Released #" + t.id),
      }, "Release claim" + (t.owner ? " of " + t.owner : "")));
    }
    if (t.awaitingApproval) {
      const who = () => {
        const by = window.prompt("Who approves or rejects? (the task's history records it)", S.approver || "");
        if (by) S.approver = by;
        return by;
      };
      out.append(el("button", {
        type: "button", id: "action-approve",
        title: "Let the task be claimed: no one can claim it until a person approves it",
        onclick: (e) => { const by = who(); if (by) act(e.target, "api/tasks/" + t.id + "/approve", { by }, "Approved #" + t.id); },
      }, "Approve"), el("button", {
        type: "button", id: "action-reject", class: "danger",
        title: "Cancel the task: the tasks that depend on it cannot start until it is reopened",
        onclick: (e) => {
          const by = who();
          const reason = by && window.prompt("Why is it rejected?");
          if (by && reason) act(e.target, "api/tasks/" + t.id + "/reject", { by, reason }, "Rejected #" + t.id);
        },
      }, "Reject"));
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
    if (S.snap && S.view === "board") { renderAttention(); renderLanes(); }
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
    $("collapse-epics").addEventListener("change", (e) => { S.collapse = e.target.checked; S.autoCompact = false; S.zoom = null; renderGraph(); });
    $("focus-path").addEventListener("click", () => setFocus({ path: true }));
    $("focus-clear").addEventListener("click", () => setFocus(null));
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
