package main

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/taskgraph/taskgraph"
)

func flagsGraph(fs *flag.FlagSet) func(e *env) error {
	format := fs.String("format", "mermaid", "mermaid or dot; --json prints nodes and edges instead")
	return func(e *env) error {
		if err := e.wantArgs(0); err != nil {
			return err
		}
		if _, ok := graphSyntaxes[*format]; !ok {
			return usagef("--format %q: want mermaid or dot (or --json)", *format)
		}
		return e.withStore(func(s store) error {
			b, err := s.Board(e.ctx)
			if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
				return err
			}
			if e.json {
				return e.printJSON(graphJSON(b))
			}
			fmt.Fprint(e.stdout, renderGraph(b, *format))
			return nil
		})
	}
}

// graphSyntax is how one --format writes a graph: a head, a node per task
// (id, label, style), an edge per dependency (blocker, blocked) and a tail.
type graphSyntax struct {
	head, node, edge, tail string
	styles                 map[string]string // a node's style by state; nil: the state itself
}

var graphSyntaxes = map[string]graphSyntax{
	"dot": {
		head:   "digraph tasks {\n  rankdir=LR;\n  node [shape=box, style=filled];\n",
		node:   "  t%d [label=\"%s\", fillcolor=%s];\n",
		edge:   "  t%d -> t%d;\n",
		tail:   "}\n",
		styles: map[string]string{"ready": "palegreen", "blocked": "white", "inprogress": "khaki", "completed": "lightgray"},
	},
	"mermaid": {
		head: "flowchart LR\n",
		node: "  t%d[\"%s\"]:::%s\n",
		edge: "  t%d --> t%d\n",
		tail: "  classDef ready fill:#cfc\n  classDef blocked fill:#fff\n  classDef inprogress fill:#ffc\n  classDef completed fill:#ddd\n",
	},
}

// graphNode and graphEdge are the graph as --json prints it: a node per
// task with its state (ready, blocked, in_progress, completed), and an edge
// per dependency, from the blocker to the task it blocks (execution order).
type (
	graphNode struct {
		ID      taskgraph.ID     `json:"id"`
		Subject string           `json:"subject"`
		Status  taskgraph.Status `json:"status"`
		State   string           `json:"state"`
		Owner   string           `json:"owner"`
	}
	graphEdge struct {
		From taskgraph.ID `json:"from"`
		To   taskgraph.ID `json:"to"`
	}
)

// graphJSON returns the board as nodes (by id) and edges (by blocked task,
// then blocker), edges to missing tasks left out as in the drawings.
func graphJSON(b taskgraph.Board) any {
	out := struct {
		Nodes []graphNode `json:"nodes"`
		Edges []graphEdge `json:"edges"`
	}{Nodes: []graphNode{}, Edges: []graphEdge{}}
	var all []taskgraph.Task
	for _, g := range []struct {
		ts    []taskgraph.Task
		state string
	}{{b.Ready, "ready"}, {b.Blocked, "blocked"}, {b.InProgress, "in_progress"}, {b.Completed, "completed"}} {
		for _, t := range g.ts {
			out.Nodes = append(out.Nodes, graphNode{t.ID, t.Subject, t.Status, g.state, t.Owner})
			all = append(all, t)
		}
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].ID < out.Nodes[j].ID })
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	exists := statuses(all)
	for _, t := range all {
		for _, by := range t.BlockedBy {
			if _, ok := exists[by]; ok {
				out.Edges = append(out.Edges, graphEdge{by, t.ID})
			}
		}
	}
	return out
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
	syn := graphSyntaxes[format]
	label := func(t taskgraph.Task) string {
		return strings.NewReplacer(`"`, `'`, "\n", " ").Replace(fmt.Sprintf("#%d %s", t.ID, t.Subject))
	}
	var sb strings.Builder
	sb.WriteString(syn.head)
	for _, n := range nodes {
		style := n.state
		if syn.styles != nil {
			style = syn.styles[n.state]
		}
		fmt.Fprintf(&sb, syn.node, n.t.ID, label(n.t), style)
	}
	for _, n := range nodes {
		for _, by := range n.t.BlockedBy {
			if exists[by] {
				fmt.Fprintf(&sb, syn.edge, by, n.t.ID)
			}
		}
	}
	sb.WriteString(syn.tail)
	return sb.String()
}
