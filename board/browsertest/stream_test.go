// The board after many changes from other processes: the page, built from
// a snapshot and the changes since, is the page a reload shows.

package browsertest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageState is what a person sees of the board, as JSON: the counts, each
// column's cards in order with their text, the filters' choices and the
// open task in full, with times ("3s ago") that tick left out.
const pageState = `((norm) => JSON.stringify({
  counts: document.getElementById("counts").textContent,
  columns: [...document.querySelectorAll("#columns .column")].map((c) => ({
    state: c.dataset.state, head: c.querySelector("h2").textContent,
    cards: [...c.querySelectorAll(".cards > li")].map((li) => [li.dataset.id || "", li.className, norm(li.textContent)]),
  })),
  labels: [...document.querySelectorAll("#filter-label option")].map((o) => o.value),
  owners: [...document.querySelectorAll("#filter-owner option")].map((o) => o.value),
  detail: document.getElementById("detail").hidden ? "" : norm(document.getElementById("detail").textContent),
  tasks: window.taskgraphBoard.tasks,
}))((s) => s.replace(/\b\d+[smhd]\b( \d+m\b)?/g, "T"))`

const graphState = `JSON.stringify({
  nodes: [...document.querySelectorAll("#nodes .node")].map((n) => [n.dataset.id || "", n.getAttribute("class"), n.textContent]),
  edges: [...document.querySelectorAll("#edges path")].map((p) => [p.dataset.from, p.dataset.to, p.getAttribute("class")]).sort(),
  status: document.getElementById("graph-status").textContent.replace(/laid out in \d+ ms/, ""),
})`

func TestChangesEqualReload(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), ".tasks")
	seed(t, dir)
	srv := serve(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
	click(t, ctx, `#columns .card[data-id="12"]`) // open in full: it changes below
	wait(t, ctx, "task 12 in full", `document.getElementById("detail").dataset.id === "12"`, 10*time.Second)

	// Many changes from other processes: tasks added, claimed, completed
	// (readying what waits on them), failed (stranding), cancelled,
	// reopened, an edge added.
	steps := [][]string{
		{"add", "Streamed one", "--after", "11", "--label", "stream"},
		{"add", "Streamed two", "--after", "17", "--priority", "1"},
		{"claim", "11", "--owner", "erin"},
		{"done", "11", "--owner", "erin", "--result", "shipped"},
		{"claim", "9", "--owner", "frank"},
		{"fail", "9", "it broke", "--owner", "frank"},
		{"cancel", "18", "not needed"},
		{"reopen", "13"},
		{"add", "Streamed three", "--label", "stream"},
		{"dep", "add", "10", "19"},
		{"reopen", "9"},
		{"add", "Streamed four"},
		{"claim", "20", "--owner", "gina"},
	}
	for _, s := range steps {
		run(t, append([]string{"--dir", dir}, s...)...)
	}
	wait(t, ctx, "every change on the page", `window.taskgraphBoard.tasks === 20 && !!document.querySelector('#columns [data-state="in_progress"] .card[data-id="20"]')`, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // any change still on its way
	if n := eval[int](t, ctx, `window.taskgraphBoard.changes`); n == 0 {
		t.Error("the page was sent no change events")
	}
	if n := eval[int](t, ctx, `window.taskgraphBoard.resyncs`); n != 0 {
		t.Errorf("the page resynced %d times", n)
	}
	t.Logf("%d changes, the last %d bytes; the snapshot %d bytes", eval[int](t, ctx, `window.taskgraphBoard.changes`),
		eval[int](t, ctx, `window.taskgraphBoard.lastChangeBytes`), eval[int](t, ctx, `window.taskgraphBoard.lastSnapshotBytes`))
	board := eval[string](t, ctx, pageState)
	click(t, ctx, "#tab-graph")
	wait(t, ctx, "the graph", `document.querySelectorAll("#nodes .node[data-id]").length === 20 && !document.getElementById("graph-status").textContent.includes("updating")`, 30*time.Second)
	graph := eval[string](t, ctx, graphState)

	// A reload: a fresh snapshot, the same page.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render after the reload", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
	click(t, ctx, "#tab-board")
	click(t, ctx, `#columns .card[data-id="12"]`)
	wait(t, ctx, "task 12 in full", `document.getElementById("detail").dataset.id === "12"`, 10*time.Second)
	if again := eval[string](t, ctx, pageState); again != board {
		t.Errorf("the board after the changes:\n%s\nafter a reload:\n%s", board, again)
	}
	click(t, ctx, "#tab-graph")
	wait(t, ctx, "the graph after the reload", `document.querySelectorAll("#nodes .node[data-id]").length === 20 && !document.getElementById("graph-status").textContent.includes("updating")`, 30*time.Second)
	if again := eval[string](t, ctx, graphState); again != graph {
		t.Errorf("the graph after the changes:\n%s\nafter a reload:\n%s", graph, again)
	}
}
