// The board before and at the start of work: an empty board says how to
// add a task, and the Ready column lists tasks in the order agents will
// claim them.

package browsertest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskgraph-dev/taskgraph"
)

// TestEmptyBoard: a board with no task says how to add one — the command
// on a read-only board, the page's own form when it may write — and the
// first task, added either way, replaces the message.
func TestEmptyBoard(t *testing.T) {
	t.Run("read-only", func(t *testing.T) {
		ctx := browser(t)
		dir := filepath.Join(t.TempDir(), ".tasks")
		run(t, "init", "--dir", dir)
		srv := serve(t, dir)
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
			t.Fatal(err)
		}
		wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
		if !eval[bool](t, ctx, `!document.getElementById("empty-board").hidden && document.getElementById("columns").hidden`) {
			t.Fatal("an empty board shows its columns, not how to add a task")
		}
		text := eval[string](t, ctx, `document.getElementById("empty-board").textContent`)
		for _, w := range []string{"No tasks yet", `taskgraph add "subject"`, "--allow-writes"} {
			if !strings.Contains(text, w) {
				t.Errorf("the empty board lacks %q: %q", w, text)
			}
		}
		if eval[bool](t, ctx, `!!document.getElementById("empty-add")`) {
			t.Error("a read-only board offers to add a task")
		}
		run(t, "--dir", dir, "add", "The first task")
		wait(t, ctx, "the first task on the board", `!!document.querySelector('#columns [data-state="ready"] .card[data-id="1"]') && document.getElementById("empty-board").hidden && !document.getElementById("columns").hidden`, 30*time.Second)
	})
	t.Run("writes", func(t *testing.T) {
		ctx := browser(t)
		dir := filepath.Join(t.TempDir(), ".tasks")
		run(t, "init", "--dir", dir)
		srv := serve(t, dir, "--allow-writes")
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
			t.Fatal(err)
		}
		wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
		if text := eval[string](t, ctx, `document.getElementById("empty-board").textContent`); !strings.Contains(text, "No tasks yet") || !strings.Contains(text, `taskgraph add "subject"`) {
			t.Errorf("the empty board says %q", text)
		}
		click(t, ctx, "#empty-add")
		wait(t, ctx, "the create form", `document.getElementById("create-dialog").open`, 10*time.Second)
		typeInto(t, ctx, `#create-form input[name="subject"]`, "Made from the empty board")
		click(t, ctx, "#create-submit")
		wait(t, ctx, "the created task on the board", `(document.querySelector('#columns .card[data-id="1"]') || {}).textContent?.includes("Made from the empty board") && document.getElementById("empty-board").hidden`, 30*time.Second)
		s, err := taskgraph.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if task, err := s.Get(context.Background(), 1); err != nil || task.Subject != "Made from the empty board" {
			t.Fatalf("the store holds %+v, %v", task, err)
		}
	})
}

// TestReadyInClaimOrder: the Ready column lists tasks as ClaimNext takes
// them, by priority and then id, as the server sends them: a new P1 task
// above older P2 and P3 ones, and the page does not sort them back by id,
// not when a filter is on either.
func TestReadyInClaimOrder(t *testing.T) {
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), ".tasks")
	run(t, "init", "--dir", dir)
	srv := serve(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url)); err != nil {
		t.Fatal(err)
	}
	wait(t, ctx, "the first render", `window.taskgraphBoard && window.taskgraphBoard.renders > 0`, 30*time.Second)
	run(t, "--dir", dir, "add", "Old chore", "--priority", "3", "--label", "chore")
	run(t, "--dir", dir, "add", "Ordinary work", "--label", "chore")
	run(t, "--dir", dir, "add", "Urgent fix", "--priority", "1", "--label", "chore")
	run(t, "--dir", dir, "add", "Another old chore", "--priority", "3")
	want := []float64{3, 2, 1, 4}
	wait(t, ctx, "four ready tasks", `(`+columnIDs+`).ready.length === 4`, 30*time.Second)
	if got := eval[map[string][]float64](t, ctx, columnIDs)["ready"]; !slices.Equal(got, want) {
		t.Errorf("the ready column shows %v, want claim order %v (P1, P2, then the P3s by id)", got, want)
	}
	s, err := taskgraph.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	next, err := s.ClaimNext(context.Background(), "agent")
	if err != nil || next.ID != 3 {
		t.Fatalf("ClaimNext took %d (%v): the column's first should be the next claimed", next.ID, err)
	}
	wait(t, ctx, "task 3 in progress", `(`+columnIDs+`).ready.length === 3`, 30*time.Second)
	choose(t, ctx, "#filter-label", "chore")
	wait(t, ctx, "the chores", `JSON.stringify((`+columnIDs+`).ready) === "[2,1]"`, 10*time.Second)
}
