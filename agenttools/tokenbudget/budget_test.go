package tokenbudget

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// The budgets of issue 12, as issues 42 and 43 raised them.
const (
	toolSetBudget = 1800 // every tool's name, title, description, input schema and output schema
	// sharedBudget is what a client puts in the model's context before
	// the first call: the tool set and the server's instructions.
	sharedBudget = 1800
	listBudget   = 1000 // task_list over a 500-task graph at its default limit, text and structured output
)

// encoding is the vocabulary every figure is counted in: o200k_base, the
// one of OpenAI's current models. cl100k_base is counted beside it.
const encoding = tokenizer.O200kBase

func codec(t *testing.T, enc tokenizer.Encoding) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(enc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func count(t *testing.T, c tokenizer.Codec, s string) int {
	t.Helper()
	n, err := c.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// definition is a tool as a client lists it to a model: MCP's tools/list
// entry without the annotations.
func definition(t *testing.T, tool agenttools.Tool) string {
	t.Helper()
	data, err := json.Marshal(struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	}{tool.Name, tool.Title, tool.Description, tool.InputSchema, tool.OutputSchema})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// measureTools returns the tokens of every definition of tools and their
// sum in enc, and logs the table.
func measureTools(t *testing.T, set string, tools []agenttools.Tool) int {
	t.Helper()
	main, other := codec(t, encoding), codec(t, tokenizer.Cl100kBase)
	total, totalOther := 0, 0
	var rows []string
	for _, tool := range tools {
		def := definition(t, tool)
		n, m := count(t, main, def), count(t, other, def)
		total += n
		totalOther += m
		rows = append(rows, fmt.Sprintf("  %-18s %5d %5d", tool.Name, n, m))
	}
	t.Logf("%s: %d tools, %d tokens (%s), %d (%s)\n  %-18s %5s %5s\n%s", set, len(tools), total, encoding, totalOther, tokenizer.Cl100kBase,
		"tool", "o200k", "cl100k", strings.Join(rows, "\n"))
	return total
}

func TestToolSetBudget(t *testing.T) {
	store := taskgraph.NewMemStore()
	for _, set := range []struct {
		name  string
		tools []agenttools.Tool
	}{
		{"task tools (agenttools.New, taskgraph mcp)", agenttools.New(store).List()},
		{"Claude Code's tools (agenttools.ClaudeCode, taskgraph mcp --tools claude-code)", agenttools.ClaudeCode(store).List()},
	} {
		total := measureTools(t, set.name, set.tools)
		if total < 20*len(set.tools) {
			t.Errorf("%s: %d tokens for %d tools: the tokenizer is not counting", set.name, total, len(set.tools))
		}
		if total > toolSetBudget {
			t.Errorf("%s cost %d tokens (%s), over the budget of %d: shorten descriptions or schemas", set.name, total, encoding, toolSetBudget)
		}
	}
}

// The MCP server's instructions (agenttools.Instructions) and the task
// tools together stay within the shared budget, and the instructions say
// what to do at each step.
func TestInstructionsBudget(t *testing.T) {
	tools := measureTools(t, "task tools", agenttools.New(taskgraph.NewMemStore()).List())
	n := count(t, codec(t, encoding), agenttools.Instructions)
	t.Logf("instructions: %d tokens (%s); with the tools, %d of %d", n, encoding, tools+n, sharedBudget)
	if n < 50 {
		t.Errorf("%d tokens of instructions: the tokenizer is not counting", n)
	}
	if tools+n > sharedBudget {
		t.Errorf("the task tools and the instructions cost %d tokens (%s), over the shared budget of %d", tools+n, encoding, sharedBudget)
	}
	for _, step := range []string{"task_claim_next", "task_note", "task_complete", "task_wait", "stop"} {
		if !strings.Contains(agenttools.Instructions, step) {
			t.Errorf("the instructions do not say %s", step)
		}
	}
}

// subjects are made of these, so that a subject reads like a real task's
// and tokenizes like one.
var (
	verbs   = []string{"Add", "Fix", "Refactor", "Test", "Document", "Implement", "Migrate", "Remove", "Optimise", "Review"}
	objects = []string{"retry logic", "input validation", "error handling", "caching layer", "rate limiter", "pagination", "audit logging", "config loader", "schema migration", "metrics export", "session store", "search index"}
	labels  = []string{"backend", "frontend", "infra", "docs"}
	places  = []string{"in the payments service", "for the user API", "in the billing worker", "for the mobile client", "in the auth module", "for the admin dashboard", "in the CLI", "for webhooks"}
)

// bigGraph is 500 tasks as a plan of that size looks a fifth of the way
// through: the first hundred completed, one failed, four in progress with
// owners, the rest pending, most blocked by one or two earlier tasks;
// every task has a label or two, and one in seven a priority other than
// the default. Its ids start after base: 0 for the sequential ids of one
// checkout, or a block's first id less one (482193000000) for those a
// clone of a graph kept in git draws.
func bigGraph(t *testing.T, base taskgraph.ID) taskgraph.Store {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	store := taskgraph.NewMemStore(taskgraph.WithClock(func() time.Time { return now }))
	tasks := make([]taskgraph.Task, 500)
	for i := range tasks {
		id := base + taskgraph.ID(i+1)
		t := taskgraph.Task{ID: id, Status: taskgraph.Pending, CreatedAt: now, UpdatedAt: now,
			Subject:  fmt.Sprintf("%s %s %s", verbs[i%len(verbs)], objects[(i/3)%len(objects)], places[(i/7)%len(places)]),
			Priority: taskgraph.DefaultPriority, Labels: []string{labels[i%len(labels)]}}
		switch {
		case i%10 == 3:
			t.Priority = taskgraph.P1
		case i%25 == 7:
			t.Priority = taskgraph.P0
		}
		if i%5 == 1 {
			t.Labels = append(t.Labels, "api")
		}
		switch {
		case i < 100:
			t.Status, t.Owner = taskgraph.Completed, fmt.Sprintf("agent-%d", i%4+1)
		case i == 100:
			t.Status, t.Owner, t.Reason = taskgraph.Failed, "agent-2", "the staging database is down"
		case i < 105:
			t.Status, t.Owner = taskgraph.InProgress, fmt.Sprintf("agent-%d", i%4+1)
		}
		if i >= 5 && i%5 != 0 {
			t.BlockedBy = append(t.BlockedBy, id-taskgraph.ID(1+i%4))
			if i%3 == 0 {
				t.BlockedBy = append(t.BlockedBy, id-5)
			}
		}
		tasks[i] = t
	}
	if err := store.Load(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	return store
}

// TestListBudget measures task_list over 500 tasks at its default limit,
// with sequential ids and with the twelve-digit ids of a clone of a graph
// kept in git (each id costs about four tokens there instead of one).
func TestListBudget(t *testing.T) {
	for _, ids := range []struct {
		name string
		base taskgraph.ID
	}{{"sequential ids", 0}, {"a clone's twelve-digit ids", 482193000000}} {
		t.Run(ids.name, func(t *testing.T) { listBudgetOf(t, bigGraph(t, ids.base)) })
	}
}

func listBudgetOf(t *testing.T, store taskgraph.Store) {
	res, err := agenttools.New(store).Call(context.Background(), "task_list", json.RawMessage(`{}`))
	if err != nil || res.IsError {
		t.Fatalf("task_list: %v %s", err, res.Text)
	}
	var out struct {
		Tasks []json.RawMessage `json:"tasks"`
		More  int               `json:"more"`
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatalf("task_list's structured output %s: %v", res.Structured, err)
	}
	lines := strings.Split(res.Text, "\n")
	text := count(t, codec(t, encoding), res.Text)
	structured := count(t, codec(t, encoding), string(res.Structured))
	n := text + structured
	m := count(t, codec(t, tokenizer.Cl100kBase), res.Text) + count(t, codec(t, tokenizer.Cl100kBase), string(res.Structured))
	t.Logf("task_list over 500 tasks, default limit: %d lines, %d tokens (%s: text %d, structured %d), %d (%s)\nfirst: %s\nlast:  %s\nfirst structured: %s",
		len(lines), n, encoding, text, structured, m, tokenizer.Cl100kBase, lines[0], lines[len(lines)-1], out.Tasks[0])
	more := 500 - agenttools.DefaultListLimit
	if len(lines) != agenttools.DefaultListLimit+1 || !strings.HasPrefix(lines[len(lines)-1], fmt.Sprintf("… and %d more", more)) {
		t.Errorf("task_list over 500 tasks printed %d lines, ending %q: want %d tasks and a line saying %d more", len(lines), lines[len(lines)-1], agenttools.DefaultListLimit, more)
	}
	if len(out.Tasks) != agenttools.DefaultListLimit || out.More != more {
		t.Errorf("task_list's structured output holds %d tasks and more %d: want %d and %d", len(out.Tasks), out.More, agenttools.DefaultListLimit, more)
	}
	if text < 10*agenttools.DefaultListLimit || structured < 10*agenttools.DefaultListLimit {
		t.Errorf("%d and %d tokens for %d tasks: the tokenizer is not counting", text, structured, agenttools.DefaultListLimit)
	}
	all, err := agenttools.New(store).Call(context.Background(), "task_list", json.RawMessage(`{"limit": 500}`))
	if err != nil || all.IsError {
		t.Fatalf("task_list: %v %s", err, all.Text)
	}
	t.Logf("for comparison, all 500 tasks (limit 500): %d tokens of text, %d structured (%s)",
		count(t, codec(t, encoding), all.Text), count(t, codec(t, encoding), string(all.Structured)), encoding)
	if n > listBudget {
		t.Errorf("task_list over 500 tasks costs %d tokens (%s), text and structured output together, over the budget of %d: lower its default limit or shorten its lines", n, encoding, listBudget)
	}
}
