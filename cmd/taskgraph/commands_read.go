// The commands that read the graph and change nothing: list, ready, board,
// show, explain, check, watch and export.

package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

func flagsList(fs *flag.FlagSet) func(e *env) error {
	f := listFlags(fs, true)
	return func(e *env) error {
		return e.withListing(f, func(s store) error {
			// The store's board: its states, limits included, come
			// from the graph it holds, not from resolving a copy.
			b, err := s.Board(e.ctx)
			if readFailed(err) {
				return err
			}
			all := allOf(b)
			v := viewOfBoard(b)
			if p := f.parent(); p != 0 {
				if _, ok := v.status[p]; !ok {
					return taskgraph.Rules.Missing(p) // as the stores' Under: not "no tasks match"
				}
			}
			shown, more := f.pick(all, v)
			if perr := e.printListed(all, shown, more, v); perr != nil {
				return perr
			}
			return err // corrupt files: listed the rest, then say so
		})
	}
}

func flagsReady(fs *flag.FlagSet) func(e *env) error {
	f := listFlags(fs, false)
	return func(e *env) error {
		return e.withListing(f, func(s store) error {
			// The ready tasks only: the rest of the board is copied
			// out only to say why none is ready.
			filters := []taskgraph.Filter{taskgraph.ReadyOnly(), taskgraph.Under(f.parent())}
			b, err := s.Board(e.ctx, filters...)
			if readFailed(err) {
				return err
			}
			v := viewOfReady(b.Ready)
			shown, more := f.pick(pointersTo(b.Ready), v)
			if perr := e.printPicked(shown, more, v); perr != nil {
				return perr
			}
			if err == nil && len(shown) == 0 {
				if b, err = s.Board(e.ctx); err != nil {
					return err
				}
				e.printNoneReady(f.labels, b)
				return errQuiet{exitUnavailable}
			}
			return err
		})
	}
}

func cmdBoard(e *env) error {
	return e.withNoArgs(func(s store) error {
		b, err := s.Board(e.ctx)
		if readFailed(err) {
			return err
		}
		if perr := e.printBoard(b); perr != nil {
			return perr
		}
		return err // corrupt files: showed the rest, then say so
	})
}

func cmdShow(e *env) error {
	return e.withTask(func(s store, t taskgraph.Task) error { return e.printTask(s, t) })
}

func cmdHistory(e *env) error {
	return e.withTask(func(s store, t taskgraph.Task) error {
		h := append([]taskgraph.Transition{}, t.History...)
		if !t.CreatedAt.IsZero() && (len(h) == 0 || h[0].Event != taskgraph.HistoryEarlier) {
			// The creation is the task's CreatedAt, not stored twice.
			h = append([]taskgraph.Transition{{At: t.CreatedAt, Event: taskgraph.HistoryCreated}}, h...)
		}
		if e.json {
			return e.printJSON(h)
		}
		fmt.Fprintf(e.stdout, "%s: %s\n", idText(t.ID), t.Subject)
		for _, x := range h {
			fmt.Fprintf(e.stdout, "  %s\n", historyLine(x))
		}
		return nil
	})
}

func cmdExplain(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		all, err := s.List(e.ctx)
		if readFailed(err) {
			return err
		}
		limits, err := s.Limits(e.ctx)
		if err != nil {
			return err
		}
		ex, err := taskgraph.Explain(all, id, time.Now(), taskgraph.WithLimits(limits))
		if err != nil {
			return err
		}
		return e.printExplanation(id, ex)
	})
}

func cmdCheck(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	if err := e.besideFiles("check"); err != nil {
		return err
	}
	if e.storeURL != "" {
		return usagef("check reads a task directory; a --store database enforces the same rules with constraints")
	}
	dir, err := e.taskDir()
	if err != nil {
		return err
	}
	problems, err := taskgraph.Check(e.ctx, dir)
	if err != nil {
		return err
	}
	// A file a merge left unmerged is a problem like the others: git
	// stopped so that a person looks.
	left, unknown := unmerged(dir)
	problems = append(left, problems...)
	// Which protocol a store on dir chooses, and why (Open reads nothing
	// of the directory: it only looks at its filesystem).
	var durability taskgraph.Durability
	if s, err := taskgraph.Open(dir, taskgraph.WithoutCreate()); err == nil {
		durability = s.Durability()
		s.Close()
	}
	if err := e.printProblems(dir, problems, durability); err != nil {
		return err
	}
	// Advice about setup (what git needs of the directory): warnings, on
	// stderr, which do not fail check.
	warnings, err := e.gitWarnings(dir)
	if err != nil {
		return err
	}
	if unknown != nil {
		warnings = append(warnings, unknown.Error())
	}
	for _, w := range warnings {
		fmt.Fprintln(e.stderr, "warning: "+w)
	}
	if len(problems) > 0 {
		return errQuiet{exitError}
	}
	return nil
}

func cmdWatch(e *env) error {
	return e.withNoArgs(func(s store) error {
		events, err := s.Watch(e.ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Watching %s (interrupt to stop)\n", e.where())
		for ev := range events {
			e.printEvent(ev)
		}
		return nil
	})
}

func cmdExport(e *env) error {
	return e.withNoArgs(func(s store) error {
		all, err := s.List(e.ctx)
		if err != nil {
			return err // an export must be whole
		}
		// Each task written indented by cliView as it is made, as list
		// --json does: not compact, scanned and indented again by
		// encoding/json (a sixth more CPU at 50,000 tasks).
		var j taskOut
		return e.printJSONArray(len(all), func(i int) any { j = toJSON(all[i]); return &j })
	})
}
