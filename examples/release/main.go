// Command release runs a small team of agents through an epic with what a
// team needs past a flat list: the epic waits on its steps and rolls them
// up, a label limit keeps two GPU jobs from running at once, a flaky
// upload is retried with a backoff, the note of an agent that died
// mid-task reaches the agent that takes the task over, the task of an
// agent that hangs — alive, renewing its lease, making no progress — comes
// back once its no-progress window has passed, the upload waits for a
// person's approval, and a checked task completes only once its check, a
// command of the graph's checks file that the agents run (WorkChecks), has
// passed.
//
//	go run ./examples/release
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

func main() {
	root, err := os.MkdirTemp("", "release-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, ".tasks") // the checks run in root
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := run(ctx, dir, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// report is what a run did, for the test.
type report struct {
	epic     taskgraph.Task
	rollup   taskgraph.Rollup
	upload   taskgraph.Task
	train    taskgraph.Task
	handover string // the note the agent that took the task over read
	docs     taskgraph.Task
	hung     error // why the hung agent's claim ended
	smoke    taskgraph.Task
	all      []taskgraph.Task
}

func run(ctx context.Context, dir string, out io.Writer) (*report, error) {
	store, err := taskgraph.Open(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()

	// At most one task labelled gpu in progress at a time, however many
	// agents ask.
	if err := store.SetLimit(ctx, "gpu", 1); err != nil {
		return nil, err
	}
	plan, err := store.CreatePlan(ctx, []taskgraph.NewTask{
		{Key: "release", Subject: "release 2.0: integrate and verify"},
		{Key: "train", Subject: "train the model", Labels: []string{"gpu"}, Under: "release"},
		{Key: "distill", Subject: "distill the model", Labels: []string{"gpu"}, Under: "release"},
		{Key: "upload", Subject: "upload the weights", After: []string{"train", "distill"}, Under: "release",
			MaxAttempts: 3, Backoff: 50 * time.Millisecond, NeedsApproval: true}, // no agent uploads until a person approves
		// A claim of the release notes that goes 300ms without progress
		// (the claim, a note) lapses, however its lease is renewed.
		{Key: "docs", Subject: "write the release notes", Under: "release", ProgressWindow: 300 * time.Millisecond},
	})
	if err != nil {
		return nil, err
	}
	epic, train := plan[0], plan[1]
	fmt.Fprintf(out, "epic #%d waits on its steps %v\n", epic.ID, epic.BlockedBy)
	smoke, checks, err := checked(ctx, store, dir)
	if err != nil {
		return nil, err
	}

	// An agent takes the training, notes how far it got, and dies: it
	// never completes, and its lease lapses.
	crashed, err := store.ClaimNext(ctx, "agent-0", taskgraph.WithLease(200*time.Millisecond), taskgraph.WithLabels("gpu"))
	if err != nil {
		return nil, err
	}
	if _, err := store.Note(ctx, crashed.ID, "agent-0", "checkpoint at epoch 7 is in /ckpt/e7: resume from it"); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "agent-0 took #%d (%s), left a note, and died\n", crashed.ID, crashed.Subject)

	// Another agent takes the release notes and hangs: its harness keeps
	// renewing the lease, but the agent never reports progress.
	docs := plan[4]
	if _, err := store.Claim(ctx, docs.ID, "agent-hung", taskgraph.WithLease(time.Minute)); err != nil {
		return nil, err
	}
	hungCtx, stopHung := taskgraph.KeepAlive(ctx, store, docs.ID, "agent-hung", time.Minute)
	fmt.Fprintf(out, "agent-hung took #%d (%s) and hangs, its lease renewed\n", docs.ID, docs.Subject)

	// The release manager approves the upload while the agents work: until
	// then no agent can claim it, and the agents wait for it.
	approved := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := store.Approve(ctx, plan[3].ID, "release-manager")
		approved <- err
	}()

	rep := &report{}
	var mu sync.Mutex
	var uploads atomic.Int32
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("agent-%d", i+1)
			errs[i] = taskgraph.Work(ctx, store, agent, func(ctx context.Context, t taskgraph.Task) error {
				mu.Lock()
				if n, ok := t.LastNote(); ok && t.PrevOwner != "" {
					rep.handover = n.Text
					fmt.Fprintf(out, "%s took over #%d from %s, whose last note says: %q\n", agent, t.ID, t.PrevOwner, n.Text)
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // the work
				if t.Key == "upload" && uploads.Add(1) < 3 {
					fmt.Fprintf(out, "%s: the upload of #%d failed (attempt %d of %d)\n", agent, t.ID, t.Attempts+1, t.MaxAttempts)
					return errors.New("registry timed out")
				}
				return nil
			}, taskgraph.WorkLease(time.Second), taskgraph.WorkChecks(checks))
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, <-approved)...); err != nil {
		return nil, err
	}
	<-hungCtx.Done() // cancelled once a renewal was refused: the claim lapsed
	rep.hung = stopHung()
	fmt.Fprintf(out, "agent-hung lost #%d: %v\n", docs.ID, rep.hung)

	rep.all, err = store.List(ctx)
	if err != nil {
		return nil, err
	}
	rep.rollup, _ = taskgraph.RollupOf(rep.all, epic.ID)
	for _, t := range rep.all {
		switch t.ID {
		case epic.ID:
			rep.epic = t
		case plan[3].ID:
			rep.upload = t
		case train.ID:
			rep.train = t
		case docs.ID:
			rep.docs = t
		case smoke.ID:
			rep.smoke = t
		}
	}
	fmt.Fprintf(out, "epic #%d is %s: its steps %s\n", rep.epic.ID, rep.epic.Status, rep.rollup)
	fmt.Fprintf(out, "the upload took %d failed attempts; its history:\n", rep.upload.Attempts)
	for _, h := range rep.upload.History {
		fmt.Fprintf(out, "  %s %s %s\n", h.Event, h.By, h.Detail)
	}
	for _, h := range rep.smoke.History {
		if h.Event == taskgraph.HistoryVerified {
			fmt.Fprintf(out, "#%d %s is %s, verified by %s: %s\n", rep.smoke.ID, rep.smoke.Subject, rep.smoke.Status, h.By, h.Detail)
		}
	}
	return rep, nil
}

// checked writes the graph's checks file — people define checks, beside
// the task files, and git commits it with them — and adds a task that
// names one: an agent completes it only once the check, which the agent
// runs (WorkChecks), has passed; its evidence goes into the history.
func checked(ctx context.Context, store taskgraph.Store, dir string) (taskgraph.Task, *taskgraph.Checks, error) {
	def := []byte(`{"smoke": {"command": "echo smoke test passed", "timeout": "30s"}}`)
	if err := os.WriteFile(filepath.Join(dir, taskgraph.ChecksFile), def, 0o644); err != nil {
		return taskgraph.Task{}, nil, err
	}
	checks, err := taskgraph.LoadChecks(dir)
	if err != nil {
		return taskgraph.Task{}, nil, err
	}
	t, err := store.Create(ctx, taskgraph.NewTask{Subject: "smoke-test the release", After: []string{"upload"},
		Check: "smoke", Acceptance: []string{"the released build starts and answers"}})
	return t, checks, err
}
