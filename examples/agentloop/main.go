// Agentloop is a complete tool-use loop wired to package agenttools: the
// harness offers the task tools to a model, runs the tool calls the model
// makes, and feeds the results back until the model answers in text.
//
// The Model interface is the only thing a real harness replaces (with a
// call to an LLM API). By default a scripted model plays the reference's
// four prompts as tool calls, so the example runs offline and is tested.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// Message is one turn of the conversation.
type Message struct {
	Role      string     // "user", "assistant" or "tool"
	Text      string     // user or assistant text, or a tool result
	ToolCalls []ToolCall // calls the assistant asks for
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	Name  string
	Input json.RawMessage
}

// Model produces the assistant's next message from the conversation so far
// and the tools on offer.
type Model interface {
	Next(ctx context.Context, history []Message, tools []agenttools.Tool) (Message, error)
}

// runTurn runs one user prompt to completion: model, tools, model, ...
func runTurn(ctx context.Context, m Model, tools *agenttools.Tools, history []Message, prompt string, out io.Writer) ([]Message, error) {
	history = append(history, Message{Role: "user", Text: prompt})
	fmt.Fprintf(out, "user> %s\n", prompt)
	for range 20 { // a bound on tool rounds, as any harness should have
		reply, err := m.Next(ctx, history, tools.List())
		if err != nil {
			return history, err
		}
		history = append(history, reply)
		if len(reply.ToolCalls) == 0 {
			fmt.Fprintf(out, "assistant> %s\n\n", reply.Text)
			return history, nil
		}
		for _, call := range reply.ToolCalls {
			result, err := tools.Call(ctx, call.Name, call.Input)
			if err != nil {
				return history, err // the harness's problem, not the model's
			}
			fmt.Fprintf(out, "  > %s %s\n%s\n", call.Name, call.Input, indent(result.Text))
			history = append(history, Message{Role: "tool", Text: result.Text})
		}
	}
	return history, fmt.Errorf("the model kept calling tools")
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// scripted plays the reference's four prompts: each user prompt maps to
// rounds of tool calls, then a closing sentence.
type scripted struct {
	rounds map[string][][]ToolCall
	turn   map[string]int
}

func call(name, input string) ToolCall { return ToolCall{Name: name, Input: json.RawMessage(input)} }

var prompts = []string{
	`Create 3 tasks: "Setup project", "Write code", "Write tests". Make them depend on each other in order.`,
	`List all tasks and show the dependency graph`,
	`Complete task 1 and then list tasks to see task 2 unblocked`,
	`Create a task board for refactoring: parse -> transform -> emit -> test, where transform and emit can run in parallel after parse`,
}

func newScripted() *scripted {
	return &scripted{turn: map[string]int{}, rounds: map[string][][]ToolCall{
		prompts[0]: {
			{call("task_create", `{"subject": "Setup project"}`), call("task_create", `{"subject": "Write code"}`), call("task_create", `{"subject": "Write tests"}`)},
			{call("task_update", `{"task_id": 2, "addBlockedBy": [1]}`), call("task_update", `{"task_id": 3, "addBlockedBy": [2]}`)},
		},
		prompts[1]: {{call("task_list", `{}`)}},
		prompts[2]: {
			{call("task_claim", `{"task_id": 1}`)},
			{call("task_complete", `{"task_id": 1}`)},
			{call("task_list", `{}`)},
		},
		prompts[3]: {
			{call("task_create", `{"subject": "parse"}`)},
			{call("task_create", `{"subject": "transform", "blockedBy": [4]}`), call("task_create", `{"subject": "emit", "blockedBy": [4]}`)},
			{call("task_create", `{"subject": "test", "blockedBy": [5, 6]}`)},
			{call("task_list", `{}`)},
		},
	}}
}

func (s *scripted) Next(ctx context.Context, history []Message, tools []agenttools.Tool) (Message, error) {
	// The prompt being answered is the last user message.
	var prompt string
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == "user" {
			prompt = history[i].Text
			break
		}
	}
	if task, ok := strings.CutPrefix(prompt, "Do task "); ok {
		return Message{Role: "assistant", Text: "Done: " + task}, nil // a real model would work here
	}
	rounds, ok := s.rounds[prompt]
	if !ok {
		return Message{Role: "assistant", Text: "I have no script for that."}, nil
	}
	n := s.turn[prompt]
	s.turn[prompt]++
	if n < len(rounds) {
		return Message{Role: "assistant", ToolCalls: rounds[n]}, nil
	}
	// Close with what the last tool said, as a model would summarise it.
	return Message{Role: "assistant", Text: "Done. " + firstLine(history[len(history)-1].Text)}, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// run plays every prompt against a store in dir, then lets the model do
// the plan it made — taskgraph.Work claims each ready task with a lease,
// hands it to the model, and completes it when the model is done — and
// returns the final board.
func run(ctx context.Context, dir string, model Model, out io.Writer) (taskgraph.Board, error) {
	store, err := taskgraph.Open(dir)
	if err != nil {
		return taskgraph.Board{}, err
	}
	defer store.Close()
	tools := agenttools.New(store, agenttools.WithOwner("agent-1"))
	var history []Message
	for _, p := range prompts {
		if history, err = runTurn(ctx, model, tools, history, p, out); err != nil {
			return taskgraph.Board{}, err
		}
	}
	err = taskgraph.Work(ctx, store, "agent-1", func(ctx context.Context, t taskgraph.Task) error {
		_, err := runTurn(ctx, model, tools, nil, fmt.Sprintf("Do task #%d: %s", t.ID, t.Subject), out)
		return err
	})
	if err != nil {
		return taskgraph.Board{}, err
	}
	return store.Board(ctx)
}

func main() {
	tmp, err := os.MkdirTemp("", "taskgraph-agentloop-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	board, err := run(context.Background(), filepath.Join(tmp, ".tasks"), newScripted(), os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("board: %d ready, %d blocked, %d completed\n", len(board.Ready), len(board.Blocked), len(board.Completed))
}
