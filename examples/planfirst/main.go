// Planfirst is a plan made in one call and drained by a team: a scripted
// model (standing in for an LLM) plans a feature with one task_plan call —
// tasks that name each other by key, with priorities and labels — and
// then four agents, each with its labels (two backend, one frontend, one
// docs), take only the work meant for them, most urgent first. One task
// fails; the tasks that depend on it are reported stranded, with why,
// instead of waiting forever or starting without the work they need.
//
//	go run ./examples/planfirst
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// The plan the scripted model writes: the one tool call of its turn.
const planCall = `{"tasks": [
  {"key": "schema",   "subject": "Design the profile schema",      "labels": ["backend"], "priority": 1},
  {"key": "migrate",  "subject": "Migrate the database",           "labels": ["backend"], "after": ["schema"]},
  {"key": "api",      "subject": "Build the profile API",          "labels": ["backend"], "after": ["migrate"]},
  {"key": "loadtest", "subject": "Load-test the profile API",      "labels": ["backend"], "after": ["api"], "priority": 3},
  {"key": "rollout",  "subject": "Enable profiles for all users",  "labels": ["backend"], "after": ["loadtest"]},
  {"key": "mockups",  "subject": "Draw the profile page mockups",  "labels": ["frontend"], "priority": 1},
  {"key": "page",     "subject": "Build the profile page",         "labels": ["frontend"], "after": ["mockups", "api"]},
  {"key": "avatar",   "subject": "Add avatar upload",              "labels": ["frontend"], "after": ["page"]},
  {"key": "apidocs",  "subject": "Document the profile API",       "labels": ["docs"], "after": ["api"]},
  {"key": "announce", "subject": "Announce profiles to users",     "labels": ["docs"], "after": ["rollout", "avatar", "apidocs"]},
  {"key": "hotfix",   "subject": "Fix the login rate limit",       "labels": ["backend"], "priority": 0},
  {"key": "tidy",     "subject": "Tidy the backend README",        "labels": ["backend"], "priority": 4}
]}`

// failing is the task that fails, and why.
const (
	failing    = "loadtest"
	failReason = "p99 latency is 2.3s under load, over the 500ms budget"
)

// An agent is a worker with an identity and the labels of the work it
// takes.
type agent struct {
	name   string
	labels []string
}

var team = []agent{
	{"backend-1", []string{"backend"}},
	{"backend-2", []string{"backend"}},
	{"frontend-1", []string{"frontend"}},
	{"writer-1", []string{"docs"}},
}

// report is what the run did, for the account and the test.
type report struct {
	plan    []taskgraph.Task            // as created, in plan order
	claimed map[string][]taskgraph.Task // by agent, in the order claimed
	order   []string                    // the keys of the tasks, in the order they were claimed
	board   taskgraph.Board             // at the end
	tasks   []taskgraph.Task            // at the end, by id
}

func main() {
	keep := flag.String("dir", "", "keep the task directory here (default: a temporary one, removed at the end)")
	flag.Parse()
	dir := *keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "taskgraph-planfirst-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, ".tasks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := run(ctx, dir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run plans into the task directory dir, lets the team drain it, and
// writes the account to out.
func run(ctx context.Context, dir string, out io.Writer) (report, error) {
	rep := report{claimed: map[string][]taskgraph.Task{}}
	store, err := taskgraph.Open(dir)
	if err != nil {
		return rep, err
	}
	defer store.Close()

	// 1. The planner's turn: one task_plan call, through the same tools a
	// real model is offered.
	fmt.Fprintf(out, "== The plan: one task_plan call\n\n")
	planner := agenttools.New(store, agenttools.WithOwner("planner"))
	res, err := planner.Call(ctx, "task_plan", json.RawMessage(planCall))
	if err != nil {
		return rep, err
	}
	if res.IsError {
		return rep, errors.New(res.Text)
	}
	fmt.Fprintf(out, "planner> task_plan {tasks: [12 tasks, naming each other by key]}\n%s\n\n", indent(res.Text))
	if rep.plan, err = store.List(ctx); err != nil {
		return rep, err
	}
	waves, err := taskgraph.Waves(rep.plan)
	if err != nil {
		return rep, err
	}
	critical, err := taskgraph.CriticalPath(rep.plan)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "%d waves; the widest has %d tasks; critical path: %s\n\n", len(waves), widest(waves), path(rep.plan, critical))

	// 2. The team drains it, each agent taking only its labels. Work
	// claims with a lease it keeps alive, completes the task when the work
	// function returns nil and fails it, stranding its dependents, when it
	// returns an error; it returns once the graph is finished: nil when
	// all is done, an ErrStalled error naming what failed or is stranded
	// otherwise, which this plan expects (the account below says it).
	fmt.Fprintf(out, "== The team: %s\n\n", teamLine())
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(team))
	for i, a := range team {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = taskgraph.Work(ctx, store, a.name, func(ctx context.Context, t taskgraph.Task) error {
				mu.Lock()
				rep.claimed[a.name] = append(rep.claimed[a.name], t)
				rep.order = append(rep.order, t.Key)
				mu.Unlock()
				result, err := do(ctx, t)
				if err != nil {
					return err
				}
				// Work completes without a result: keep it in the metadata.
				_, err = store.Update(ctx, t.ID, taskgraph.Patch{Metadata: map[string]any{"result": result}})
				return err
			}, taskgraph.WorkLabels(a.labels...), taskgraph.WorkLease(30*time.Second))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, taskgraph.ErrStalled) {
			return rep, err
		}
	}
	for _, a := range team {
		var parts []string
		for _, t := range rep.claimed[a.name] {
			parts = append(parts, fmt.Sprintf("#%d", t.ID))
		}
		fmt.Fprintf(out, "%-10s {%s} took %s\n", a.name, strings.Join(a.labels, ", "), strings.Join(parts, ", "))
	}

	// 3. The account.
	if rep.board, err = store.Board(ctx); err != nil {
		return rep, err
	}
	if rep.tasks, err = store.List(ctx); err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "\n== The outcome\n\n")
	fmt.Fprintf(out, "Completed (%d):\n", len(rep.board.Completed))
	for _, t := range rep.board.Completed {
		fmt.Fprintf(out, "  #%d %s, by %s: %s\n", t.ID, t.Subject, t.Owner, t.Metadata["result"])
	}
	for _, t := range rep.board.Failed {
		fmt.Fprintf(out, "Failed: #%d %s, by %s: %s\n", t.ID, t.Subject, t.Owner, t.Reason)
	}
	fmt.Fprintf(out, "Stranded (%d), reported instead of waiting forever:\n", len(rep.board.Stranded))
	for _, t := range rep.board.Stranded {
		ex, err := taskgraph.Explain(rep.tasks, t.ID, time.Now())
		if err != nil {
			return rep, err
		}
		fmt.Fprintf(out, "  #%d %s: %s\n", t.ID, t.Subject, ex.Text)
	}
	if err := check(rep); err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "\nEvery agent took only tasks carrying its labels, most urgent first; no task was claimed twice;\n"+
		"the graph is finished (nothing ready, blocked or in progress): reopen #%d to run what it strands.\n", rep.board.Failed[0].ID)
	return rep, nil
}

// do stands in for the agent's work on t: a moment's work, a line of
// result, and for the load test, a failure.
func do(ctx context.Context, t taskgraph.Task) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(time.Duration(5+len(t.Subject)%7) * time.Millisecond):
	}
	if t.Key == failing {
		return "", errors.New(failReason)
	}
	return results[t.Key], nil
}

var results = map[string]string{
	"schema":   "profiles table: user_id, display_name, bio, avatar_url",
	"migrate":  "migration 0042 applied",
	"api":      "GET/PUT /v1/profiles/{id}",
	"mockups":  "three breakpoints, in the design file",
	"page":     "/profile/:id renders and edits",
	"avatar":   "uploads resized to 256px",
	"apidocs":  "reference page published",
	"rollout":  "flag profiles=on for everyone",
	"announce": "blog post and email",
	"hotfix":   "limit raised to 20/min per IP",
	"tidy":     "README sections reordered",
}

// check verifies what the account claims.
func check(rep report) error {
	owner := map[taskgraph.ID]string{}
	for _, a := range team {
		for _, t := range rep.claimed[a.name] {
			if other, dup := owner[t.ID]; dup {
				return fmt.Errorf("task %d was claimed by %s and by %s", t.ID, other, a.name)
			}
			owner[t.ID] = a.name
			for _, l := range a.labels {
				if !slices.Contains(t.Labels, l) {
					return fmt.Errorf("%s took task %d, which does not carry its label %s", a.name, t.ID, l)
				}
			}
		}
	}
	// The two most urgent backend tasks, ready from the start, go before
	// the least urgent one, which was ready from the start too.
	at := func(key string) int { return slices.Index(rep.order, key) }
	if at("tidy") < at("hotfix") || at("tidy") < at("schema") {
		return fmt.Errorf("the P4 task was claimed before a P0 or P1 one: %v", rep.order)
	}
	if !rep.board.Finished() || len(rep.board.Failed) != 1 || len(rep.board.Stranded) == 0 {
		return fmt.Errorf("want a finished graph with one failed task and stranded dependents, got %d ready, %d blocked, %d in progress, %d failed, %d stranded",
			len(rep.board.Ready), len(rep.board.Blocked), len(rep.board.InProgress), len(rep.board.Failed), len(rep.board.Stranded))
	}
	return nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func widest(waves [][]taskgraph.ID) int {
	n := 0
	for _, w := range waves {
		n = max(n, len(w))
	}
	return n
}

// path names the tasks of ids by key.
func path(tasks []taskgraph.Task, ids []taskgraph.ID) string {
	key := map[taskgraph.ID]string{}
	for _, t := range tasks {
		key[t.ID] = t.Key
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = key[id]
	}
	return strings.Join(parts, " -> ")
}

func teamLine() string {
	var parts []string
	for _, a := range team {
		parts = append(parts, fmt.Sprintf("%s {%s}", a.name, strings.Join(a.labels, ", ")))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
