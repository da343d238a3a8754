package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/taskgraph/taskgraph"
)

func flagsGraph(fs *flag.FlagSet) func(e *env) error {
	format := fs.String("format", "mermaid", "mermaid or dot")
	return func(e *env) error {
		if err := e.wantArgs(0); err != nil {
			return err
		}
		if *format != "mermaid" && *format != "dot" {
			return usagef("--format %q: want mermaid or dot", *format)
		}
		return e.withStore(func(s store) error {
			b, err := s.Board(e.ctx)
			if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
				return err
			}
			fmt.Fprint(e.stdout, renderGraph(b, *format))
			return nil
		})
	}
}

// renderGraph draws the board with edges in execution order (blocker ->
// blocked) and a style per state: ready, blocked, in progress, completed.
func renderGraph(b taskgraph.Board, format string) string {
	type node struct {
		t     taskgraph.Task
		state string
	}
	var nodes []node
	for _, g := range []struct {
		ts    []taskgraph.Task
		state string
	}{{b.Ready, "ready"}, {b.Blocked, "blocked"}, {b.InProgress, "inprogress"}, {b.Completed, "completed"}} {
		for _, t := range g.ts {
			nodes = append(nodes, node{t, g.state})
		}
	}
	exists := map[taskgraph.ID]bool{}
	for _, n := range nodes {
		exists[n.t.ID] = true
	}
	var sb strings.Builder
	label := func(t taskgraph.Task) string {
		return strings.NewReplacer(`"`, `'`, "\n", " ").Replace(fmt.Sprintf("#%d %s", t.ID, t.Subject))
	}
	if format == "dot" {
		colors := map[string]string{"ready": "palegreen", "blocked": "white", "inprogress": "khaki", "completed": "lightgray"}
		sb.WriteString("digraph tasks {\n  rankdir=LR;\n  node [shape=box, style=filled];\n")
		for _, n := range nodes {
			fmt.Fprintf(&sb, "  t%d [label=\"%s\", fillcolor=%s];\n", n.t.ID, label(n.t), colors[n.state])
		}
		for _, n := range nodes {
			for _, by := range n.t.BlockedBy {
				if exists[by] {
					fmt.Fprintf(&sb, "  t%d -> t%d;\n", by, n.t.ID)
				}
			}
		}
		sb.WriteString("}\n")
		return sb.String()
	}
	sb.WriteString("flowchart LR\n")
	for _, n := range nodes {
		fmt.Fprintf(&sb, "  t%d[\"%s\"]:::%s\n", n.t.ID, label(n.t), n.state)
	}
	for _, n := range nodes {
		for _, by := range n.t.BlockedBy {
			if exists[by] {
				fmt.Fprintf(&sb, "  t%d --> t%d\n", by, n.t.ID)
			}
		}
	}
	sb.WriteString("  classDef ready fill:#cfc\n  classDef blocked fill:#fff\n  classDef inprogress fill:#ffc\n  classDef completed fill:#ddd\n")
	return sb.String()
}
