// The board for the people watching a team of agents (issue 44): every
// column in the window, what needs attention first, what happened, who
// holds what, how far each epic has come, and a graph of 1,000 tasks that
// can be read.

package browsertest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskgraph-dev/taskgraph"
)

// TestWatchingAgents opens boards of 30 and 1,000 tasks at 1,440 × 900 and
// checks what a person sees: every column's box inside the window; the
// header naming the graph, not a path; the "needs attention" strip listing
// each failed task, the lapsed lease and the stranded tasks; each agent's
// lane showing its claim; each epic's progress bar matching its rollup
// (taskgraph.RollupOf); a claim made by another process (the CLI) in the
// activity feed within a second; and at 1,000 tasks, the graph after Fit
// with every node in the window, labels at least 10 px high, epics
// collapsed, and the focus on one task and on the critical path.
func TestWatchingAgents(t *testing.T) {
	for _, n := range []int{30, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) { watching(t, n) })
	}
}

func watching(t *testing.T, n int) {
	ctx := browser(t)
	repo := filepath.Join(t.TempDir(), "acme-shop")
	dir := filepath.Join(repo, ".tasks")
	project(t, dir, n)
	store, err := taskgraph.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	bg := context.Background()
	b, err := store.Board(bg)
	if err != nil {
		t.Fatal(err)
	}
	all, err := store.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	var lapsed []taskgraph.ID
	for _, task := range b.InProgress {
		if !task.LeaseExpiresAt.After(time.Now()) {
			lapsed = append(lapsed, task.ID)
		}
	}
	if len(b.Failed) == 0 || len(lapsed) != 1 || len(b.Stranded) == 0 {
		t.Fatalf("the project has %d failed, lapsed leases %v, %d stranded: not the board to test", len(b.Failed), lapsed, len(b.Stranded))
	}
	srv := serve(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)

	// The header names the graph: the repository's directory.
	if title := eval[string](t, ctx, `document.getElementById("title").textContent`); title != "acme-shop" {
		t.Errorf("the header names the graph %q, want %q", title, "acme-shop")
	}

	// Every column inside the window; an empty one takes a narrow slot.
	cols := eval[[][]float64](t, ctx, `[...document.querySelectorAll("#columns .column")].map(c => { const r = c.getBoundingClientRect(); return [r.left, r.right, r.width, c.querySelectorAll(".card").length]; })`)
	width := eval[float64](t, ctx, `window.innerWidth`)
	if width != 1440 || len(cols) != 10 { // awaiting approval, ready, deferred, limited, blocked, stranded, in progress, completed, failed, cancelled
		t.Fatalf("the window is %v px wide with %d columns", width, len(cols))
	}
	states := eval[[]string](t, ctx, `[...document.querySelectorAll("#columns .column")].map(c => c.dataset.state)`)
	for i, c := range cols {
		if c[0] < 0 || c[1] > width {
			t.Errorf("column %s spans %.0f–%.0f px: outside the window of %.0f", states[i], c[0], c[1], width)
		}
		count := eval[int](t, ctx, `window.taskgraphBoard.version && document.querySelectorAll('#columns [data-state="`+states[i]+`"] .count')[0].textContent === "0" ? 0 : 1`)
		if count == 0 && c[2] > 60 {
			t.Errorf("the empty column %s is %.0f px wide", states[i], c[2])
		}
	}

	// Needs attention: every failed task, the lapsed lease, the stranded.
	strip := eval[map[string][]float64](t, ctx, `(() => { const out = {};
		for (const a of document.querySelectorAll("#attention [data-attn]")) (out[a.dataset.attn] ||= []).push(Number(a.dataset.goto));
		return out; })()`)
	stripText := eval[string](t, ctx, `document.getElementById("attention").textContent`)
	if off := eval[[]string](t, ctx, `[...document.querySelectorAll("#attention [data-group]")].filter(g => { const r = g.getBoundingClientRect(); return r.bottom > window.innerHeight / 3 || r.right > window.innerWidth; }).map(g => g.dataset.group)`); len(off) > 0 {
		t.Errorf("the attention strip's groups %v are not in the top third of the window", off)
	}
	for _, f := range b.Failed {
		if !slices.Contains(strip["failed"], float64(f.ID)) && len(strip["failed"]) < 4 {
			t.Errorf("the attention strip lists the failed tasks %v, not %d", strip["failed"], f.ID)
		}
	}
	if !strings.Contains(stripText, fmt.Sprintf("Failed %d", len(b.Failed))) || !strings.Contains(stripText, fmt.Sprintf("Stranded %d", len(b.Stranded))) {
		t.Errorf("the attention strip says %q: want Failed %d and Stranded %d", stripText, len(b.Failed), len(b.Stranded))
	}
	if !slices.Equal(strip["lapsed"], []float64{float64(lapsed[0])}) {
		t.Errorf("the attention strip lists the lapsed leases %v, want [%d]", strip["lapsed"], lapsed[0])
	}
	if lapsedCard := eval[bool](t, ctx, `!!document.querySelector('.card.is-lapsed[data-id="`+itoa(lapsed[0])+`"]')`); !lapsedCard {
		t.Errorf("task %d's lapsed lease is shown as plainly in progress", lapsed[0])
	}

	// A lane per agent, showing what it holds.
	lanes := eval[map[string][]float64](t, ctx, `Object.fromEntries([...document.querySelectorAll("#lane-list .lane[data-agent]")].map(l => [l.dataset.agent, [...l.querySelectorAll("[data-held]")].map(h => Number(h.dataset.held))]))`)
	for _, task := range b.InProgress {
		if !slices.Contains(lanes[task.Owner], float64(task.ID)) {
			t.Errorf("%s's lane shows %v, not its claim of %d", task.Owner, lanes[task.Owner], task.ID)
		}
	}

	// Each epic's progress bar is its rollup.
	epics := 0
	for _, task := range all {
		r, children := taskgraph.RollupOf(all, task.ID)
		if len(children) == 0 {
			continue
		}
		epics++
		sel := `#columns .card[data-id="` + itoa(task.ID) + `"] .progress`
		if !eval[bool](t, ctx, `!!document.querySelector('`+sel+`')`) {
			continue // a completed epic, hidden with the completed work
		}
		got := eval[[]string](t, ctx, `[document.querySelector('`+sel+`').dataset.done, document.querySelector('`+sel+`').dataset.total, document.querySelector('`+sel+` + .progress-text').textContent]`)
		if want := []string{fmt.Sprint(r.Done), fmt.Sprint(r.Total), r.String()}; !slices.Equal(got, want) {
			t.Errorf("epic %d's progress bar says %v, its rollup %v", task.ID, got, want)
		}
	}
	if n >= 100 && epics != 10 {
		t.Errorf("%d epics, want 10", epics)
	}

	// Another process claims a task: the feed shows it within a second.
	ready := b.Ready[0].ID
	out, err := exec.Command(cli(t), "--dir", dir, "--owner", "agent-late", "claim", itoa(ready)).CombinedOutput()
	if err != nil {
		t.Fatalf("taskgraph claim %d: %v\n%s", ready, err, out)
	}
	start := time.Now()
	wait(t, ctx, "the claim in the activity feed", `!!document.querySelector('#feed-list .feed-item[data-id="`+itoa(ready)+`"][data-event="claimed"]')`, 5*time.Second)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the claim reached the activity feed %v after the command ended", took)
	}
	if first := eval[string](t, ctx, `document.querySelector("#feed-list .feed-item").textContent`); !strings.Contains(first, "agent-late claimed #"+itoa(ready)) {
		t.Errorf("the newest activity reads %q", first)
	}
	wait(t, ctx, "agent-late's lane", `!!document.querySelector('#lane-list .lane[data-agent="agent-late"] [data-held="`+itoa(ready)+`"]')`, 5*time.Second)

	click(t, ctx, "#tab-graph")
	if n < 100 {
		// A small graph at Fit: every node in the window, labelled.
		wait(t, ctx, "the graph laid out", `document.getElementById("graph-status").textContent.includes("laid out") && !document.getElementById("graph-status").textContent.includes("updating")`, time.Minute)
		fitted(t, ctx)
		return
	}
	// The graph at 1,000 tasks: Fit shows every node, labelled; the epics
	// collapse to one node each.
	wait(t, ctx, "the graph laid out with epics collapsed", `document.getElementById("graph-status").textContent.includes("epics collapsed") && !document.getElementById("graph-status").textContent.includes("updating")`, 2*time.Minute)
	t.Logf("the graph with epics collapsed: [width height nodes] %v", eval[[]float64](t, ctx, `window.taskgraphBoard.layoutSize`))
	fitted(t, ctx)
	screenshot(t, ctx, "graph-1000")
	if got := eval[int](t, ctx, `document.querySelectorAll("#nodes .node.epic").length`); got != 10 {
		t.Errorf("the graph collapses %d epics, want 10", got)
	}
	// The critical path alone.
	path, err := taskgraph.CriticalPath(all)
	if err != nil {
		t.Fatal(err)
	}
	click(t, ctx, "#focus-path")
	wait(t, ctx, "the critical path alone", `document.querySelectorAll("#nodes .node[data-id]").length === `+fmt.Sprint(len(path))+` && document.getElementById("graph-status").textContent.includes("critical path only") && !document.getElementById("graph-status").textContent.includes("updating")`, time.Minute)
	fitted(t, ctx)
	// One task's neighbourhood, from its detail.
	focus := b.Blocked[0]
	eval[bool](t, ctx, `(document.querySelector('#focus-clear').click(), true)`)
	eval[bool](t, ctx, `(location.hash = "#board", true)`)
	click(t, ctx, `#columns .card[data-id="`+itoa(focus.ID)+`"]`)
	click(t, ctx, "#action-focus")
	wait(t, ctx, "the task's neighbourhood", `document.getElementById("graph-status").textContent.includes("around #`+itoa(focus.ID)+`") && !document.getElementById("graph-status").textContent.includes("updating") && !!document.querySelector('#nodes .node[data-id="`+itoa(focus.ID)+`"]')`, time.Minute)
	shown := eval[[]float64](t, ctx, `[...document.querySelectorAll("#nodes .node[data-id]")].map(n => Number(n.dataset.id))`)
	for _, id := range append(slices.Clone(focus.BlockedBy), focus.Blocks...) {
		if !slices.Contains(shown, float64(id)) {
			t.Errorf("focused on %d, the graph shows %v: not its neighbour %d", focus.ID, shown, id)
		}
	}
	if len(shown) > 60 {
		t.Errorf("focused on %d, the graph shows %d tasks", focus.ID, len(shown))
	}
	fitted(t, ctx)
}
