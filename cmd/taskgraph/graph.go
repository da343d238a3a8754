// The graph command: the dependency graph drawn in Mermaid or dot, as
// waves and the critical path in text, or as JSON.

package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

func flagsGraph(fs *flag.FlagSet) func(e *env) error {
	format := fs.String("format", "mermaid", "mermaid, dot or waves; --json prints nodes, edges, waves and the critical path instead")
	return func(e *env) error {
		if err := e.wantArgs(0); err != nil {
			return err
		}
		if _, ok := graphSyntaxes[*format]; !ok && *format != "waves" {
			return usagef("--format %q: want mermaid, dot or waves (or --json)", *format)
		}
		return e.withStore(func(s store) error {
			all, err := s.List(e.ctx)
			if readFailed(err) {
				return err
			}
			la, lerr := lookAhead(all)
			if lerr != nil {
				return lerr
			}
			b := taskgraph.Resolve(all)
			switch {
			case e.json:
				return e.printJSON(graphJSON(b, la))
			case *format == "waves":
				fmt.Fprint(e.stdout, renderWaves(b, la))
			default:
				fmt.Fprint(e.stdout, renderGraph(b, la, *format))
			}
			return err
		})
	}
}

// ahead is the remaining work as the resolver sees it: the waves (what
// could run at once, round by round) and the critical path (the longest
// chain of unfinished tasks).
type ahead struct {
	waves    [][]taskgraph.ID
	critical []taskgraph.ID
}

func lookAhead(all []taskgraph.Task) (ahead, error) {
	waves, err := taskgraph.Waves(all)
	if err != nil {
		return ahead{}, err
	}
	critical, err := taskgraph.CriticalPath(all)
	return ahead{waves, critical}, err
}

// graphSyntax is how one --format writes a graph: a head, a node per task
// (id, label, style), an edge per dependency (blocker, blocked) and a tail.
type graphSyntax struct {
	head, node, edge, tail string
	// critical is an edge of the critical path; rank a wave's nodes, given
	// as the list of node names (dot ranks them together).
	critical, rank string
	styles         map[taskgraph.State]string // a node's style by state; nil: the state, without "_"
}

var graphSyntaxes = map[string]graphSyntax{
	"dot": {
		head:     "digraph tasks {\n  rankdir=LR;\n  node [shape=box, style=filled];\n",
		node:     "  t%d [label=\"%s\", fillcolor=%s];\n",
		edge:     "  t%d -> t%d;\n",
		critical: "  t%d -> t%d [penwidth=3];\n",
		rank:     "  { rank=same; %s } // wave %d\n",
		tail:     "}\n",
		styles: map[taskgraph.State]string{taskgraph.StateReady: "palegreen", taskgraph.StateBlocked: "white",
			taskgraph.StateDeferred: "lightcyan", taskgraph.StateLimited: "lavender", taskgraph.StateAwaitingApproval: "gold", taskgraph.StateInProgress: "khaki", taskgraph.StateCompleted: "lightgray", taskgraph.StateStranded: "mistyrose",
			taskgraph.StateFailed: "salmon", taskgraph.StateCancelled: "gainsboro"},
	},
	"mermaid": {
		head:     "flowchart LR\n",
		node:     "  t%d[\"%s\"]:::%s\n",
		edge:     "  t%d --> t%d\n",
		critical: "  t%d ==> t%d\n",
		rank:     "  %%%% wave %[2]d: %[1]s\n",
		tail: "  classDef ready fill:#cfc\n  classDef deferred fill:#dff\n  classDef limited fill:#eef\n  classDef blocked fill:#fff\n  classDef inprogress fill:#ffc\n  classDef completed fill:#ddd\n" +
			"  classDef stranded fill:#fee\n  classDef failed fill:#f99\n  classDef cancelled fill:#eee,stroke-dasharray:4\n",
	},
}

// graphNode and graphEdge are the graph as --json prints it: a node per
// task with its state (ready, deferred, limited, blocked, stranded, in_progress, completed,
// failed, cancelled), and an edge per dependency, from the blocker to the
// task it blocks (execution order).
type (
	graphNode struct {
		ID      taskgraph.ID     `json:"id"`
		Subject string           `json:"subject"`
		Status  taskgraph.Status `json:"status"`
		State   taskgraph.State  `json:"state"`
		Owner   string           `json:"owner"`
	}
	graphEdge struct {
		From taskgraph.ID `json:"from"`
		To   taskgraph.ID `json:"to"`
	}
)

// graphJSON returns the board as nodes (by id) and edges (by blocked task,
// then blocker), edges to missing tasks left out as in the drawings, with
// the waves and the critical path of the remaining work.
func graphJSON(b taskgraph.Board, la ahead) any {
	out := struct {
		Nodes        []graphNode      `json:"nodes"`
		Edges        []graphEdge      `json:"edges"`
		Waves        [][]taskgraph.ID `json:"waves"`
		CriticalPath []taskgraph.ID   `json:"criticalPath"`
	}{Nodes: []graphNode{}, Edges: []graphEdge{}, Waves: la.waves, CriticalPath: la.critical}
	if out.Waves == nil {
		out.Waves = [][]taskgraph.ID{}
	}
	if out.CriticalPath == nil {
		out.CriticalPath = []taskgraph.ID{}
	}
	var all []taskgraph.Task
	for _, g := range b.Lists() {
		for _, t := range g.Tasks {
			out.Nodes = append(out.Nodes, graphNode{t.ID, t.Subject, t.Status, g.State, t.Owner})
			all = append(all, t)
		}
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].ID < out.Nodes[j].ID })
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	exists := map[taskgraph.ID]bool{}
	for _, t := range all {
		exists[t.ID] = true
	}
	for _, t := range all {
		for _, by := range t.BlockedBy {
			if exists[by] {
				out.Edges = append(out.Edges, graphEdge{by, t.ID})
			}
		}
	}
	return out
}

// renderGraph draws the board with edges in execution order (blocker ->
// blocked), a style per state, the waves of the remaining work ranked (in
// dot) or noted (in Mermaid), and the critical path's edges drawn thick.
func renderGraph(b taskgraph.Board, la ahead, format string) string {
	type node struct {
		t     taskgraph.Task
		state taskgraph.State
	}
	var nodes []node
	for _, g := range b.Lists() {
		for _, t := range g.Tasks {
			nodes = append(nodes, node{t, g.State})
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].t.ID < nodes[j].t.ID })
	exists := map[taskgraph.ID]bool{}
	for _, n := range nodes {
		exists[n.t.ID] = true
	}
	onPath := map[[2]taskgraph.ID]bool{}
	for i := 1; i < len(la.critical); i++ {
		onPath[[2]taskgraph.ID{la.critical[i-1], la.critical[i]}] = true
	}
	syn := graphSyntaxes[format]
	label := func(t taskgraph.Task) string {
		return strings.NewReplacer(`"`, `'`, "\n", " ").Replace(fmt.Sprintf("#%d %s", t.ID, t.Subject))
	}
	var sb strings.Builder
	sb.WriteString(syn.head)
	for _, n := range nodes {
		style := strings.ReplaceAll(string(n.state), "_", "")
		if syn.styles != nil {
			style = syn.styles[n.state]
		}
		fmt.Fprintf(&sb, syn.node, n.t.ID, label(n.t), style)
	}
	for _, n := range nodes {
		for _, by := range n.t.BlockedBy {
			switch {
			case !exists[by]:
			case onPath[[2]taskgraph.ID{by, n.t.ID}]:
				fmt.Fprintf(&sb, syn.critical, by, n.t.ID)
			default:
				fmt.Fprintf(&sb, syn.edge, by, n.t.ID)
			}
		}
	}
	for i, w := range la.waves {
		names := make([]string, len(w))
		for j, id := range w {
			names[j] = fmt.Sprintf("t%d;", id)
		}
		if format == "mermaid" {
			for j, id := range w {
				names[j] = fmt.Sprintf("#%d", id)
			}
		}
		fmt.Fprintf(&sb, syn.rank, strings.Join(names, " "), i+1)
	}
	sb.WriteString(syn.tail)
	return sb.String()
}

// renderWaves writes the remaining work as text: each wave, the critical
// path, and the pending tasks that are in no wave because they cannot
// start.
func renderWaves(b taskgraph.Board, la ahead) string {
	byID := map[taskgraph.ID]taskgraph.Task{}
	for _, g := range b.Lists() {
		for _, t := range g.Tasks {
			byID[t.ID] = t
		}
	}
	name := func(id taskgraph.ID) string { return fmt.Sprintf("#%d %s", id, byID[id].Subject) }
	var sb strings.Builder
	if len(la.waves) == 0 {
		sb.WriteString("No work left that can run.\n")
	}
	widest := 0
	for i, w := range la.waves {
		widest = max(widest, len(w))
		parts := make([]string, len(w))
		for j, id := range w {
			parts[j] = name(id)
			if byID[id].Status == taskgraph.InProgress {
				parts[j] += " (in progress)"
			}
		}
		fmt.Fprintf(&sb, "wave %d: %s\n", i+1, strings.Join(parts, ", "))
	}
	if len(la.critical) > 0 {
		parts := make([]string, len(la.critical))
		for i, id := range la.critical {
			parts[i] = name(id)
		}
		fmt.Fprintf(&sb, "critical path (%d steps): %s\n", len(la.critical), strings.Join(parts, " -> "))
		fmt.Fprintf(&sb, "%d waves; at most %d tasks can run at once\n", len(la.waves), widest)
	}
	inWave := map[taskgraph.ID]bool{}
	for _, w := range la.waves {
		for _, id := range w {
			inWave[id] = true
		}
	}
	var stuck []string
	for _, t := range append(append([]taskgraph.Task{}, b.Stranded...), b.Blocked...) {
		switch {
		case inWave[t.ID]:
		case b.StrandedBy[t.ID] != 0:
			stuck = append(stuck, fmt.Sprintf("%s (waits on #%d, %s)", name(t.ID), b.StrandedBy[t.ID], byID[b.StrandedBy[t.ID]].Status))
		default:
			stuck = append(stuck, name(t.ID)+" (waits on a task that does not exist)")
		}
	}
	if len(stuck) > 0 {
		fmt.Fprintf(&sb, "cannot start: %s\n", strings.Join(stuck, ", "))
	}
	return sb.String()
}
