package browsertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskgraph-dev/taskgraph"
)

// seed writes a release plan with tasks in every state into dir: 1 and 2
// completed, 3 in progress under a lease, 4 in progress with a lapsed
// lease, 9 and 11 ready, 13 failed, 14 and 15 stranded by it (15 through
// 14), 16 cancelled, the rest blocked.
func seed(t *testing.T, dir string) {
	t.Helper()
	s, err := taskgraph.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	type task struct {
		subject, desc string
		after         []taskgraph.ID
		meta          map[string]any
		pri           taskgraph.Priority
		labels        []string
	}
	const p2 = taskgraph.DefaultPriority
	for _, p := range []task{
		{"Design the schema", "Tables for users, projects and tasks.", nil, map[string]any{"estimate": "1d"}, p2, []string{"backend"}},
		{"Set up CI", "", nil, nil, p2, []string{"ops"}},
		{"Database migrations", "Forward-only migrations, tested on a copy of production.", []taskgraph.ID{1}, nil, taskgraph.P1, []string{"backend"}},
		{"Auth service", "Sessions and API tokens.", []taskgraph.ID{1}, nil, p2, []string{"backend"}},
		{"REST API endpoints", "CRUD for projects and tasks; pagination; errors as RFC 9457.", []taskgraph.ID{3, 4}, map[string]any{"estimate": "3d"}, taskgraph.P1, []string{"backend"}},
		{"Web frontend", "", []taskgraph.ID{5}, nil, p2, []string{"frontend"}},
		{"CLI client", "", []taskgraph.ID{5}, nil, taskgraph.P3, nil},
		{"Load tests", "", []taskgraph.ID{2, 5}, nil, p2, []string{"ops"}},
		{"Write user docs", "", nil, nil, taskgraph.P4, []string{"docs"}},
		{"Release notes", "", []taskgraph.ID{6, 7, 9}, nil, p2, []string{"docs"}},
		{"Logging and metrics", "", []taskgraph.ID{2}, nil, p2, []string{"ops"}},
		{"Deploy to staging", "", []taskgraph.ID{8, 10, 11}, nil, taskgraph.P0, []string{"ops"}},
		{"Import legacy accounts", "From the old system's nightly dump.", nil, nil, taskgraph.P1, []string{"data"}},
		{"Verify imported accounts", "", []taskgraph.ID{13}, nil, p2, []string{"data"}},
		{"Invite beta users", "", []taskgraph.ID{14}, nil, p2, nil},
		{"Internet Explorer support", "", []taskgraph.ID{6}, nil, taskgraph.P4, []string{"frontend"}},
	} {
		nt := taskgraph.NewTask{Subject: p.subject, Description: p.desc, BlockedBy: p.after, Metadata: p.meta, Priority: p.pri, Labels: p.labels}
		if _, err := s.Create(ctx, nt); err != nil {
			t.Fatal(err)
		}
	}
	steps := []error{}
	do := func(_ any, err error) { steps = append(steps, err) }
	do(s.Claim(ctx, 1, "alice"))
	do(s.Complete(ctx, 1, "alice", taskgraph.WithResult("schema.sql: 6 tables")))
	do(s.Claim(ctx, 2, "bob"))
	do(s.Complete(ctx, 2, "bob"))
	window := 10 * time.Minute // carol's claim ends by it before her 30m lease
	do(s.Update(ctx, 3, taskgraph.Patch{ProgressWindow: &window}))
	do(s.Claim(ctx, 3, "carol", taskgraph.WithLease(30*time.Minute)))
	do(s.Claim(ctx, 4, "dave", taskgraph.WithLease(time.Millisecond)))
	do(s.Claim(ctx, 13, "frank"))
	do(s.Fail(ctx, 13, "frank", "the dump is truncated: checksum mismatch"))
	do(s.Note(ctx, 5, "erin", "pagination is cursor-based: see the RFC"))
	do(s.Cancel(ctx, 16, "dropped from scope"))
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond) // dave's lease lapses
}

// columnIDs is the ids of the cards in each column of the board, as the
// page shows them.
const columnIDs = `Object.fromEntries([...document.querySelectorAll("#columns .column")].map(c =>
	[c.dataset.state, [...c.querySelectorAll(".card")].map(e => Number(e.dataset.id))]))`

// blanks lists the elements of the page that show a text "null",
// "undefined" or "NaN": a value the script failed to render.
const blanks = `(() => {
	const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), out = [];
	while (w.nextNode()) if (/^(null|undefined|NaN)$/.test(w.currentNode.data.trim())) out.push(w.currentNode.parentElement.outerHTML.slice(0, 80));
	return out;
})()`

// TestBoard opens the board of a plan in headless Chromium: the board and
// the graph show every task, a change made by another process appears
// without a reload, and with writes allowed each action works by clicking.
func TestBoard(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), ".tasks")
	seed(t, dir)
	srv := serve(t, dir, "--allow-writes")
	if len(srv.token) < 16 {
		t.Fatalf("serve --allow-writes printed %q: no token", srv.url)
	}
	store, err := taskgraph.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bg := context.Background()

	// The board: every task in its column, counted.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
	// Ready is in claim order, as the server sends it: 11 (P2) before
	// the older 9 (P4).
	want := map[string][]float64{"awaiting_approval": {}, "ready": {11, 9}, "deferred": {}, "limited": {}, "blocked": {5, 6, 7, 8, 10, 12}, "stranded": {14, 15}, "in_progress": {3, 4},
		"completed": {1, 2}, "failed": {13}, "cancelled": {16}}
	if n := eval[int](t, ctx, `document.querySelectorAll("#columns .column").length`); n != len(want) {
		t.Errorf("the board has %d columns, want %d", n, len(want))
	}
	got := eval[map[string][]float64](t, ctx, columnIDs)
	for state, ids := range want {
		if !slices.Equal(got[state], ids) {
			t.Errorf("column %s shows %v, want %v", state, got[state], ids)
		}
	}
	counts := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("#columns .column")].map(c => [c.dataset.state, c.querySelector(".count").textContent]))`)
	for state, ids := range want {
		if counts[state] != strconv.Itoa(len(ids)) {
			t.Errorf("column %s counts %q, want %d", state, counts[state], len(ids))
		}
	}
	if meta := eval[string](t, ctx, `document.querySelector('.card[data-id="3"] .card-meta').textContent`); !strings.Contains(meta, "carol") || !strings.Contains(meta, "claimed") || !(strings.Contains(meta, "no-progress window 9m left") || strings.Contains(meta, "no-progress window 10m left")) {
		t.Errorf("card 3 (carol, 30m lease, 10m no-progress window) says %q", meta)
	}
	if meta := eval[string](t, ctx, `document.querySelector('.card[data-id="4"].is-lapsed .card-meta').textContent`); !strings.Contains(meta, "dave") || !strings.Contains(meta, "lease lapsed") {
		t.Errorf("card 4 (dave, lapsed lease) says %q", meta)
	}
	// A failed task says why; the tasks it strands, directly (14) or
	// through another (15), name it.
	if meta := eval[string](t, ctx, `document.querySelector('#columns [data-state="failed"] .card[data-id="13"]').textContent`); !strings.Contains(meta, "frank") || !strings.Contains(meta, "checksum mismatch") || !strings.Contains(meta, "P1") {
		t.Errorf("card 13 (failed, P1) says %q", meta)
	}
	for _, id := range []string{"14", "15"} {
		if meta := eval[string](t, ctx, `document.querySelector('#columns [data-state="stranded"] .card[data-id="`+id+`"] .card-meta').textContent`); !strings.Contains(meta, "stranded by #13 Import legacy accounts (failed)") {
			t.Errorf("card %s (stranded by 13) says %q", id, meta)
		}
	}
	if meta := eval[string](t, ctx, `document.querySelector('#columns [data-state="cancelled"] .card[data-id="16"]').textContent`); !strings.Contains(meta, "dropped from scope") {
		t.Errorf("card 16 (cancelled) says %q", meta)
	}
	if meta := eval[string](t, ctx, `document.querySelector('.card[data-id="1"]').textContent`); !strings.Contains(meta, "schema.sql: 6 tables") || !strings.Contains(meta, "backend") {
		t.Errorf("card 1 (a result, labelled backend) says %q", meta)
	}
	if prios := eval[[]string](t, ctx, `[...document.querySelectorAll("#columns .card .prio")].map(e => e.textContent)`); len(prios) != 7 {
		t.Errorf("the cards show priorities %v, want the 7 that are not P2", prios)
	}
	if bad := eval[[]string](t, ctx, blanks); len(bad) > 0 {
		t.Errorf("the board shows null, undefined or NaN in %v", bad)
	}
	if hash := eval[string](t, ctx, `location.hash`); strings.Contains(hash, "token") {
		t.Errorf("the token stays in the address bar: %q", hash)
	}
	eval[chromedp.Void](t, ctx, `window.loadedOnce = true`) // a reload would lose it
	screenshot(t, ctx, "board")

	// The graph: a node per task, coloured by state, an edge per blocker,
	// left to right.
	click(t, ctx, "#tab-graph")
	wait(t, ctx, "the graph", `document.querySelectorAll("#nodes .node[data-id]").length === 16`, 30*time.Second)
	edges := 0
	tasks, err := store.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		edges += len(task.BlockedBy)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#edges path").length`); n != edges {
		t.Errorf("the graph draws %d edges, want %d", n, edges)
	}
	for state, ids := range want {
		if n := eval[int](t, ctx, `document.querySelectorAll("#nodes .node.state-`+state+`").length`); n != len(ids) {
			t.Errorf("%d nodes coloured %s, want %d", n, state, len(ids))
		}
	}
	backwards := eval[[]string](t, ctx, `(() => {
		const x = id => Number(document.querySelector('#nodes .node[data-id="' + id + '"]').getAttribute("transform").match(/translate\(([-\d.]+)/)[1]);
		return [...document.querySelectorAll("#edges path")].filter(p => x(p.dataset.from) >= x(p.dataset.to)).map(p => p.dataset.from + "->" + p.dataset.to);
	})()`)
	if len(backwards) > 0 {
		t.Errorf("edges that do not run left to right: %v", backwards)
	}

	// The critical path (taskgraph.CriticalPath): its nodes and the edges
	// between consecutive ones are marked, and nothing else is.
	path, err := taskgraph.CriticalPath(tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(path) < 3 {
		t.Fatalf("the plan's critical path %v is too short to test", path)
	}
	t.Logf("critical path %v", path)
	var wantNodes, wantEdges []string
	for i, id := range path {
		wantNodes = append(wantNodes, itoa(id))
		if i > 0 {
			wantEdges = append(wantEdges, itoa(path[i-1])+"->"+itoa(id))
		}
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll("#nodes .node.critical")].map(n => n.dataset.id).sort((a, b) => a - b)`); !slices.Equal(got, wantNodes) {
		t.Errorf("critical nodes %v, want %v", got, wantNodes)
	}
	if got := eval[[]string](t, ctx, `[...document.querySelectorAll("#edges path.critical")].map(p => p.dataset.from + "->" + p.dataset.to).sort((a, b) => parseInt(a) - parseInt(b))`); !slices.Equal(got, wantEdges) {
		t.Errorf("critical edges %v, want %v", got, wantEdges)
	}
	if stroke := eval[string](t, ctx, `getComputedStyle(document.querySelector("#edges path.critical")).stroke + " " + getComputedStyle(document.querySelector("#edges path:not(.critical)")).stroke`); strings.Fields(stroke)[0] == strings.Fields(stroke)[len(strings.Fields(stroke))-1] {
		t.Errorf("critical and other edges are drawn alike: %s", stroke)
	}

	// A click on a node shows the task, and why it is not ready.
	click(t, ctx, `#nodes .node[data-id="5"]`)
	wait(t, ctx, "the task in full", `!document.getElementById("detail").hidden`, 10*time.Second)
	detail := eval[string](t, ctx, `document.getElementById("detail").textContent`)
	for _, w := range []string{"REST API endpoints", "Why it is not ready", "task 5 is blocked, waiting on 3 (in progress, held by carol, lease", "4 (in progress, held by dave, lease lapsed",
		"#3", "#4", "P1", "backend", "critical path", "estimate", "RFC 9457",
		"Notes, latest first", "erin: pagination is cursor-based: see the RFC", "History (latest 1)", "noted by erin"} {
		if !strings.Contains(detail, w) {
			t.Errorf("the detail of task 5 lacks %q:\n%s", w, detail)
		}
	}
	// A stranded task's detail says why in taskgraph.Explain's words.
	click(t, ctx, `#nodes .node[data-id="15"]`)
	wait(t, ctx, "task 15 in full", `document.getElementById("detail").dataset.id === "15"`, 10*time.Second)
	explained, err := taskgraph.Explain(tasks, 15, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if why := eval[string](t, ctx, `document.querySelector("#detail .why").textContent`); why != explained.Text {
		t.Errorf("task 15 is not ready because %q; Explain says %q", why, explained.Text)
	}
	if bad := eval[[]string](t, ctx, blanks); len(bad) > 0 {
		t.Errorf("the detail of task 15 shows null, undefined or NaN in %v", bad)
	}
	screenshot(t, ctx, "graph")

	// A change from another process reaches the open page: a new task on
	// the graph, then a claim on the board.
	before := eval[int](t, ctx, `window.taskgraphBoard.snapshots`)
	run(t, "--dir", dir, "add", "Hotfix from another process", "--after", "9")
	wait(t, ctx, "the new task on the graph", `document.querySelectorAll("#nodes .node[data-id]").length === 17`, 30*time.Second)
	click(t, ctx, "#tab-board")
	wait(t, ctx, "the new task on the board", `!!document.querySelector('#columns [data-state="blocked"] .card[data-id="17"]')`, 10*time.Second)
	run(t, "--dir", dir, "claim", "11", "--owner", "erin")
	wait(t, ctx, "erin's claim", `(document.querySelector('#columns [data-state="in_progress"] .card[data-id="11"]')||{}).textContent?.includes("erin")`, 30*time.Second)
	if !eval[bool](t, ctx, `window.loadedOnce === true`) {
		t.Fatal("the page reloaded")
	}
	t.Logf("two writes by other processes reached the page in %d snapshots", eval[int](t, ctx, `window.taskgraphBoard.snapshots`)-before)

	// Release a stuck claim by clicking: dave's lapsed lease on 4.
	click(t, ctx, `#columns .card[data-id="4"]`)
	wait(t, ctx, "the release button", `!!document.getElementById("action-release")`, 10*time.Second)
	click(t, ctx, "#action-release")
	waitStore(t, store, "task 4 released", func() bool {
		task, err := store.Get(bg, 4)
		return err == nil && task.Status == taskgraph.Pending && task.Owner == ""
	})
	wait(t, ctx, "task 4 ready on the board", `!!document.querySelector('#columns [data-state="ready"] .card[data-id="4"]')`, 10*time.Second)

	// Reopening a completed task whose dependent is in progress (erin
	// holds 11) is refused with the store's message, and nothing changes.
	click(t, ctx, `#columns .card[data-id="2"]`)
	wait(t, ctx, "the reopen button of task 2", `document.getElementById("detail").dataset.id === "2" && !!document.getElementById("action-reopen")`, 10*time.Second)
	click(t, ctx, "#action-reopen")
	wait(t, ctx, "the reopen refused", `document.getElementById("detail-error").textContent.includes("depend on task 2")`, 10*time.Second)
	if task, _ := store.Get(bg, 2); task.Status != taskgraph.Completed {
		t.Fatalf("a refused reopen changed task 2: %s", task.Status)
	}

	// Reopen the failed task by clicking: it is pending again, and the
	// tasks it stranded are only blocked now.
	click(t, ctx, `#columns .card[data-id="13"]`)
	wait(t, ctx, "the reopen button of task 13", `document.getElementById("detail").dataset.id === "13" && !!document.getElementById("action-reopen")`, 10*time.Second)
	if detail := eval[string](t, ctx, `document.getElementById("detail").textContent`); !strings.Contains(detail, "checksum mismatch") {
		t.Errorf("the detail of failed task 13 lacks its reason:\n%s", detail)
	}
	click(t, ctx, "#action-reopen")
	waitStore(t, store, "task 13 reopened", func() bool {
		task, err := store.Get(bg, 13)
		return err == nil && task.Status == taskgraph.Pending && task.Owner == "" && task.Reason == ""
	})
	wait(t, ctx, "task 13 ready, 14 and 15 blocked", `(() => { const c = `+columnIDs+`; return c.ready.includes(13) && c.blocked.includes(14) && c.blocked.includes(15) && c.stranded.length === 0 && c.failed.length === 0; })()`, 10*time.Second)

	// Add an edge by clicking; one that would close a cycle is refused
	// with the store's message, and nothing changes.
	click(t, ctx, `#columns .card[data-id="9"]`)
	wait(t, ctx, "the edge form", `!!document.getElementById("blocker-input")`, 10*time.Second)
	typeInto(t, ctx, "#blocker-input", "12")
	click(t, ctx, "#action-add-blocker")
	wait(t, ctx, "the cycle refused", `document.getElementById("detail-error").textContent.includes("dependency cycle")`, 10*time.Second)
	if task, _ := store.Get(bg, 9); len(task.BlockedBy) != 0 {
		t.Fatalf("a refused edge was stored: %v", task.BlockedBy)
	}
	eval[chromedp.Void](t, ctx, `document.getElementById("blocker-input").value = ""`)
	typeInto(t, ctx, "#blocker-input", "#4")
	click(t, ctx, "#action-add-blocker")
	waitStore(t, store, "the edge 9 after 4", func() bool {
		task, err := store.Get(bg, 9)
		return err == nil && slices.Equal(task.BlockedBy, []taskgraph.ID{4})
	})
	wait(t, ctx, "task 9 blocked on the board", `!!document.querySelector('#columns [data-state="blocked"] .card[data-id="9"]')`, 10*time.Second)

	// Create a task by clicking.
	click(t, ctx, "#new-task")
	typeInto(t, ctx, `#create-form input[name="subject"]`, "Made on the board")
	typeInto(t, ctx, `#create-form input[name="blockedBy"]`, "12")
	click(t, ctx, "#create-submit")
	waitStore(t, store, "the created task", func() bool {
		task, err := store.Get(bg, 18)
		return err == nil && task.Subject == "Made on the board" && slices.Equal(task.BlockedBy, []taskgraph.ID{12})
	})
	wait(t, ctx, "the created task on the board", `!!document.querySelector('#columns [data-state="blocked"] .card[data-id="18"]')`, 10*time.Second)
	if !eval[bool](t, ctx, `window.loadedOnce === true`) {
		t.Fatal("the page reloaded")
	}
}

// TestReadOnly: without --allow-writes the page offers no action, and the
// server refuses a write even with a guessed token.
func TestReadOnly(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), ".tasks")
	seed(t, dir)
	srv := serve(t, dir)
	if srv.token != "" {
		t.Fatalf("a read-only serve printed a token: %q", srv.url)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
	if eval[bool](t, ctx, `!document.getElementById("new-task").hidden`) {
		t.Error("a read-only page offers to create a task")
	}
	click(t, ctx, `#columns .card[data-id="4"]`)
	wait(t, ctx, "the task in full", `!document.getElementById("detail").hidden`, 10*time.Second)
	if eval[bool](t, ctx, `!!document.getElementById("action-release")`) {
		t.Error("a read-only page offers to release a claim")
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("api/tasks/4/release", {method: "POST",
		headers: {"Content-Type": "application/json", "X-Taskgraph-Token": "guessed-guessed-guessed"}, body: "{}"}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if status != 403 {
		t.Errorf("a write to a read-only board: %d, want 403", status)
	}
}

// TestServeRefusesRemote: a non-loopback address needs --allow-remote.
func TestServeRefusesRemote(t *testing.T) {
	out, err := exec.Command(cli(t), "serve", "--dir", t.TempDir(), "--addr", "0.0.0.0:0").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--allow-remote") {
		t.Fatalf("serve on 0.0.0.0 without --allow-remote: %v\n%s", err, out)
	}
}

// TestLargeGraph measures a board of 1,000 tasks: how long the board and
// the graph take to render, and how soon a burst of 500 writes from 4
// processes shows on the open page. The figures are logged, not asserted.
func TestLargeGraph(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	const n = 1000
	func() {
		s, err := taskgraph.Open(dir, taskgraph.WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		bg := context.Background()
		r := rand.New(rand.NewPCG(1, 2))
		var tasks []taskgraph.NewTask
		for i := 1; i <= n; i++ {
			nt := taskgraph.NewTask{Subject: fmt.Sprintf("task %d of a large plan", i)}
			for k := 0; k < 2 && i > 1; k++ {
				if b := taskgraph.ID(max(1, i-1-r.IntN(10))); r.IntN(3) > 0 && !slices.Contains(nt.BlockedBy, b) {
					nt.BlockedBy = append(nt.BlockedBy, b)
				}
			}
			tasks = append(tasks, nt)
		}
		for _, nt := range tasks {
			if _, err := s.Create(bg, nt); err != nil {
				t.Fatal(err)
			}
		}
		for id := taskgraph.ID(1); id <= 300; id++ { // the first 300 done, in order
			if _, err := s.Claim(bg, id, "agent"); err == nil {
				s.Complete(bg, id, "agent")
			}
		}
		for i := 0; i < 8; i++ {
			s.ClaimNext(bg, fmt.Sprintf("agent-%d", i), taskgraph.WithLease(time.Hour))
		}
	}()
	srv := serve(t, dir)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the board of 1,000 tasks", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, time.Minute)
	click(t, ctx, "#hide-completed") // a board this big hides its completed tasks: show them all
	wait(t, ctx, "the completed tasks", `document.querySelectorAll("#columns .card").length === `+strconv.Itoa(n), time.Minute)
	if cards := eval[int](t, ctx, `document.querySelectorAll("#columns .card").length`); cards != n {
		t.Fatalf("the board shows %d cards, want %d", cards, n)
	}
	boardMs := eval[float64](t, ctx, `window.taskgraphBoard.firstRenderAt`)
	renderMs := eval[float64](t, ctx, `window.taskgraphBoard.lastRenderMs`)
	bytes := eval[float64](t, ctx, `performance.getEntriesByType("resource").concat(performance.getEntriesByType("navigation")).reduce((a, e) => a + (e.encodedBodySize || 0), 0)`)
	snapBytes := eval[float64](t, ctx, `window.taskgraphBoard.lastSnapshotBytes`)
	t.Logf("board of %d tasks: on screen %.0f ms after navigation started (rendering took %.0f ms); page, script and style %.0f KiB; a snapshot of the graph %.0f KiB", n, boardMs, renderMs, bytes/1024, snapBytes/1024)

	eval[chromedp.Void](t, ctx, `window.graphClicked = performance.now()`)
	click(t, ctx, "#tab-graph")
	wait(t, ctx, "the graph of 1,000 tasks", `document.querySelectorAll("#nodes .node[data-id]").length === `+strconv.Itoa(n), 2*time.Minute)
	layoutMs := eval[float64](t, ctx, `window.taskgraphBoard.lastLayoutMs`)
	graphMs := eval[float64](t, ctx, `window.taskgraphBoard.layoutAt - window.graphClicked`)
	t.Logf("graph of %d tasks: on screen %.0f ms after the click (dagre layout in a worker: %.0f ms)", n, graphMs, layoutMs)

	// The burst, watched on the board.
	click(t, ctx, "#tab-board")
	wait(t, ctx, "the board again", `document.querySelectorAll("#columns .card").length === `+strconv.Itoa(n), time.Minute)
	const procs, each = 4, 125
	snapsBefore := eval[int](t, ctx, `window.taskgraphBoard.snapshots`)
	start := time.Now()
	var (
		mu        sync.Mutex
		lastWrite int64
		wg        sync.WaitGroup
	)
	for range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", burstEnv, dir, each))
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("writer process: %v", err)
				return
			}
			ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
			if err != nil {
				t.Errorf("writer process printed %q", out)
				return
			}
			mu.Lock()
			lastWrite = max(lastWrite, ns)
			mu.Unlock()
		})
	}
	// A person clicks while the burst goes on: the click is not lost to
	// the snapshots arriving meanwhile.
	click(t, ctx, `#columns .card[data-id="500"]`)
	wait(t, ctx, "task 500 in full during the burst", `document.getElementById("detail").textContent.includes("task 500 of a large plan")`, 30*time.Second)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	wait(t, ctx, "the burst on the board", `window.taskgraphBoard.tasks === `+strconv.Itoa(n+procs*each), time.Minute)
	shown := eval[float64](t, ctx, `window.taskgraphBoard.lastRenderWall`)
	snaps := eval[int](t, ctx, `window.taskgraphBoard.snapshots`) - snapsBefore
	writeSecs := time.Duration(lastWrite - start.UnixNano()).Seconds()
	t.Logf("burst: %d writes from %d processes in %.2f s (%.0f writes/s); on the page %.0f ms after the last write, in %d snapshots (%.1f/s)",
		procs*each, procs, writeSecs, float64(procs*each)/writeSecs, shown-float64(lastWrite)/1e6, snaps, float64(snaps)/(writeSecs+(shown-float64(lastWrite)/1e6)/1000))
	if cards := eval[int](t, ctx, `document.querySelectorAll("#columns .card").length`); cards != n+procs*each {
		t.Fatalf("the board shows %d cards after the burst, want %d", cards, n+procs*each)
	}
}

// waitStore waits up to 10 s for a condition on the store.
func waitStore(t *testing.T, _ *taskgraph.FileStore, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("the store does not show %s after 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
