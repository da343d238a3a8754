// The board at 1,000 tasks: a plan the size of a real project, with
// labels, owners and failures, and what the page offers to find a task in
// it.

package browsertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskgraph-dev/taskgraph"
)

// project writes a project of n tasks into dir, as a team would have it
// part way through: the first 60% completed, a few failed with the tasks
// behind them stranded, eight in progress and one more whose lease has
// lapsed, the rest ready or blocked; past 100 tasks, the last ten are
// epics that every task from the 16th is part of. Each
// task has one of five areas as its label and a priority; task 7 is
// failed, and strands a chain of eight tasks behind it. It returns the ids
// task 7 strands.
func project(t *testing.T, dir string, n int) []taskgraph.ID {
	t.Helper()
	s, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bg := context.Background()
	r := rand.New(rand.NewPCG(7, 11))
	areas := []string{"backend", "frontend", "ops", "docs", "data"}
	verbs := []string{"Write", "Review", "Test", "Refactor", "Document", "Migrate", "Profile", "Fix"}
	things := []string{"the login flow", "the billing export", "the search index", "the audit log", "the rate limiter",
		"the upload path", "the nightly job", "the settings page", "the API client", "the cache layer"}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// 1..6: done foundations; 7 fails; 8..15 hang off 7, each after the
	// one before (8 directly), so 7 strands all eight.
	for i := 1; i <= n; i++ {
		nt := taskgraph.NewTask{
			Subject: fmt.Sprintf("%s %s (%d)", verbs[r.IntN(len(verbs))], things[r.IntN(len(things))], i),
			Labels:  []string{areas[r.IntN(len(areas))]},
		}
		nt.Priority = taskgraph.PriorityLevel(r.IntN(5))
		switch {
		case i == 8:
			nt.BlockedBy = []taskgraph.ID{7}
		case i > 8 && i <= 15:
			nt.BlockedBy = []taskgraph.ID{taskgraph.ID(i - 1)}
		case i > 15:
			for k := 0; k < 2; k++ {
				b := taskgraph.ID(max(16, i-1-r.IntN(12)))
				if b < taskgraph.ID(i) && b%97 != 0 && r.IntN(3) > 0 && !slices.Contains(nt.BlockedBy, b) {
					nt.BlockedBy = append(nt.BlockedBy, b)
				}
			}
		}
		must(s.Create(bg, nt))
	}
	for id := taskgraph.ID(1); id <= 6; id++ {
		must(s.Claim(bg, id, "agent-0"))
		must(s.Complete(bg, id, "agent-0"))
	}
	must(s.Claim(bg, 7, "agent-1"))
	must(s.Fail(bg, 7, "agent-1", "the vendor API returns 500 for every request"))
	done := min(16+n*6/10, n-10)
	for id := taskgraph.ID(16); id < taskgraph.ID(done); id++ {
		owner := fmt.Sprintf("agent-%d", 2+r.IntN(6))
		if _, err := s.Claim(bg, id, owner); err != nil {
			continue
		}
		if id%97 == 0 {
			must(s.Fail(bg, id, owner, "flaky test in CI"))
			continue
		}
		must(s.Complete(bg, id, owner))
	}
	for i := range min(8, n/10) {
		s.ClaimNext(bg, fmt.Sprintf("agent-%d", 2+i), taskgraph.WithLease(time.Hour))
	}
	// One agent went quiet: its lease lapses at once.
	b, err := s.Board(bg)
	if err != nil || len(b.Ready) == 0 {
		t.Fatalf("no ready task for agent-quiet: %v", err)
	}
	must(s.Claim(bg, b.Ready[0].ID, "agent-quiet", taskgraph.WithLease(time.Millisecond)))
	// The last ten tasks are epics, and every task from 16 on is part of
	// one.
	if n >= 100 {
		for id := taskgraph.ID(16); id <= taskgraph.ID(n-10); id++ {
			epic := taskgraph.ID(n-9) + id%10
			must(s.Update(bg, id, taskgraph.Patch{Parent: &epic}))
		}
	}
	return []taskgraph.ID{8, 9, 10, 11, 12, 13, 14, 15}
}

// TestBoardAtScale opens a project of 1,000 tasks and finds its way
// around it as a person would: completed work is collapsed by default, the
// search, the label, owner and state filters each show exactly the tasks
// they match, a failed task counts every task it strands, and the graph's
// Fit view is drawn at a size that can be read, scrolled to where the
// work is.
func TestBoardAtScale(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), ".tasks")
	const n = 1000
	strands := project(t, dir, n)
	store, err := taskgraph.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	b, err := store.Board(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var open []taskgraph.Task // every task but the completed ones
	for _, l := range [][]taskgraph.Task{b.Ready, b.Blocked, b.Stranded, b.InProgress, b.Failed, b.Cancelled} {
		open = append(open, l...)
	}
	if len(b.Completed) < 500 || len(b.InProgress) == 0 || len(b.Failed) < 2 {
		t.Fatalf("the project has %d completed, %d in progress, %d failed: not the board to test", len(b.Completed), len(b.InProgress), len(b.Failed))
	}
	ids := func(keep func(taskgraph.Task) bool) []taskgraph.ID {
		var out []taskgraph.ID
		for _, task := range open {
			if keep(task) {
				out = append(out, task.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	srv := serve(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the board of 1,000 tasks", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, time.Minute)

	// Finished work is collapsed to a line: a board this big hides its
	// completed tasks until asked.
	all := ids(func(taskgraph.Task) bool { return true })
	waitShown(t, ctx, "every task but the completed ones", all)
	if !eval[bool](t, ctx, `document.getElementById("hide-completed").checked`) {
		t.Error(`"Hide completed" is off on a board of 1,000 tasks`)
	}
	if note := eval[string](t, ctx, `document.querySelector('#columns [data-state="completed"] .hidden-note').textContent`); !strings.Contains(note, fmt.Sprintf("%d completed, hidden", len(b.Completed))) {
		t.Errorf("the completed column says %q", note)
	}
	if status := eval[string](t, ctx, `document.getElementById("filter-status").textContent`); !strings.Contains(status, fmt.Sprintf("Showing %d of %d tasks", len(open), n)) {
		t.Errorf("the filter bar says %q", status)
	}
	// The Ready column in claim order, as the server sent it.
	var ready []float64
	for _, task := range b.Ready {
		ready = append(ready, float64(task.ID))
	}
	if got := eval[map[string][]float64](t, ctx, columnIDs)["ready"]; !slices.Equal(got, ready) {
		t.Errorf("the ready column shows %v, want claim order %v", got, ready)
	}
	screenshot(t, ctx, "board-1000")

	// A failed task counts all it strands, not only what waits on it
	// directly.
	card := eval[string](t, ctx, `document.querySelector('#columns .card[data-id="7"] .card-meta').textContent`)
	if want := fmt.Sprintf("strands %d: #8, #9, #10, #11, …", len(strands)); !strings.Contains(card, want) {
		t.Errorf("failed card 7 says %q, want %q", card, want)
	}
	click(t, ctx, `#columns .card[data-id="7"]`)
	wait(t, ctx, "task 7 in full", `document.getElementById("detail").dataset.id === "7"`, 10*time.Second)
	if got := eval[[]float64](t, ctx, `[...document.querySelectorAll("#detail .links.strands [data-goto]")].map(a => Number(a.dataset.goto))`); len(got) != len(strands) {
		t.Errorf("the detail of task 7 lists %v as stranded, want %v", got, strands)
	}
	if detail := eval[string](t, ctx, `document.getElementById("detail").textContent`); !strings.Contains(detail, fmt.Sprintf("It strands %d tasks", len(strands))) {
		t.Errorf("the detail of task 7 says:\n%s", detail)
	}
	eval[chromedp.Void](t, ctx, `document.querySelector("#detail .close").click()`)

	// The search: every word, anywhere in the task.
	typeInto(t, ctx, "#search", "billing export")
	waitShown(t, ctx, "the search for billing export", ids(func(task taskgraph.Task) bool {
		s := strings.ToLower(task.Subject)
		return strings.Contains(s, "billing") && strings.Contains(s, "export")
	}))
	typeInto(t, ctx, "#search", "#7")
	waitShown(t, ctx, "the search for #7", []taskgraph.ID{7})
	click(t, ctx, "#clear-filters")
	waitShown(t, ctx, "the filters cleared", all)

	// A label, an owner, a state: those of a task in progress, so that
	// each choice and both together match some task.
	area, owner := b.InProgress[0].Labels[0], b.InProgress[0].Owner
	choose(t, ctx, "#filter-label", area)
	waitShown(t, ctx, "the label "+area, ids(func(task taskgraph.Task) bool { return slices.Contains(task.Labels, area) }))
	choose(t, ctx, "#filter-owner", owner)
	waitShown(t, ctx, "the label "+area+" held by "+owner, ids(func(task taskgraph.Task) bool {
		return slices.Contains(task.Labels, area) && task.Owner == owner
	}))
	choose(t, ctx, "#filter-label", "")
	waitShown(t, ctx, "the tasks of "+owner, ids(func(task taskgraph.Task) bool { return task.Owner == owner }))
	choose(t, ctx, "#filter-owner", "")
	choose(t, ctx, "#filter-state", "failed")
	waitShown(t, ctx, "the failed tasks", ids(func(task taskgraph.Task) bool { return task.Status == taskgraph.Failed }))
	if cols := eval[[]string](t, ctx, `[...document.querySelectorAll("#columns .column:not([hidden])")].map(c => c.dataset.state)`); !slices.Equal(cols, []string{"failed"}) {
		t.Errorf("filtered to the failed tasks, the board shows the columns %v", cols)
	}
	click(t, ctx, "#clear-filters")

	// Completed work back on the board, then hidden again.
	click(t, ctx, "#show-completed")
	wait(t, ctx, "every card", `document.querySelectorAll("#columns .card").length === `+strconv.Itoa(n), 10*time.Second)
	click(t, ctx, "#hide-completed")
	waitShown(t, ctx, "the completed tasks hidden again", all)

	// The graph's Fit view: the unfinished tasks only, every node in the
	// window; too many to label at that size, so the epics are collapsed.
	click(t, ctx, "#tab-graph")
	wait(t, ctx, "the graph of the unfinished tasks", `document.getElementById("graph-status").textContent.includes("`+fmt.Sprintf("%d of %d tasks in", len(open), n)+`")`, 2*time.Minute)
	if done := eval[int](t, ctx, `document.querySelectorAll("#nodes .node.state-completed").length`); done != 0 {
		t.Errorf("the graph draws %d completed tasks with them hidden", done)
	}
	fitted(t, ctx)
	if epics := eval[int](t, ctx, `document.querySelectorAll("#nodes .node.epic").length`); epics == 0 {
		t.Errorf("the graph of %d tasks at Fit collapses no epic", len(open))
	}

	// A filter applies to the graph too.
	choose(t, ctx, "#filter-state", "failed")
	wait(t, ctx, "the failed tasks on the graph", `document.querySelectorAll("#nodes .node[data-id]").length === `+strconv.Itoa(len(b.Failed)), time.Minute)
}

// choose picks a value in a select, as a person's choice does: the value,
// then a change event.
func choose(t *testing.T, ctx context.Context, selector, value string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, fmt.Sprintf(`(() => {
		const s = document.querySelector(%q);
		s.value = %q;
		if (s.value !== %q) throw new Error("no option " + %q + " in " + %q);
		s.dispatchEvent(new Event("change", {bubbles: true}));
	})()`, selector, value, value, value, selector))
}

// shown lists the ids of the cards the board shows, in order.
const shown = `[...document.querySelectorAll("#columns .column:not([hidden]) .card")].map(e => Number(e.dataset.id)).sort((a, b) => a - b)`

// waitShown waits up to 10 s for the board to show exactly the cards want.
func waitShown(t *testing.T, ctx context.Context, what string, want []taskgraph.ID) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: nothing to show is no test", what)
	}
	w := make([]string, len(want))
	for i, id := range want {
		w[i] = itoa(id)
	}
	expr := `JSON.stringify(` + shown + `) === "[` + strings.Join(w, ",") + `]"`
	deadline := time.Now().Add(10 * time.Second)
	for !eval[bool](t, ctx, expr) {
		if time.Now().After(deadline) {
			got := eval[[]float64](t, ctx, shown)
			t.Fatalf("%s: the board shows %d cards, want %d\ngot  %v\nwant %v", what, len(got), len(want), clipIDs(got), clipIDs(want))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clipIDs[T any](ids []T) string {
	if len(ids) > 30 {
		return fmt.Sprint(ids[:30]) + "…"
	}
	return fmt.Sprint(ids)
}

// fitted checks the graph as Fit draws it: every node inside the window,
// and every label at least 10 px high.
func fitted(t *testing.T, ctx context.Context) {
	t.Helper()
	out := eval[[]string](t, ctx, `(() => {
		const box = document.getElementById("graph-scroll").getBoundingClientRect(), out = [];
		for (const n of document.querySelectorAll("#nodes .node")) {
			const r = n.getBoundingClientRect();
			if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.push("node " + (n.dataset.id || "?") + " lies outside the window");
			const text = n.querySelector("text.subject");
			if (text && text.getBoundingClientRect().height < 10) out.push("node " + n.dataset.id + "'s label is " + text.getBoundingClientRect().height.toFixed(1) + " px high");
		}
		if (!document.querySelectorAll("#nodes .node").length) out.push("no node drawn");
		return out.slice(0, 10);
	})()`)
	for _, problem := range out {
		t.Error("after Fit: " + problem)
	}
}
