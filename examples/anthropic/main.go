// Command anthropic wires the taskgraph tools to Claude through the
// Anthropic Go SDK: the model plans and works through a task graph in
// .tasks, calling task_create, task_update, task_list, ... as tools.
//
// It lives in its own module so that the SDK never becomes a dependency of
// taskgraph itself. Run it with ANTHROPIC_API_KEY set:
//
//	cd examples/anthropic && go run . "Plan a blog: outline, draft, edit, publish"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// toolParams turns agenttools' tools into the SDK's tool definitions.
func toolParams(tools []agenttools.Tool) ([]anthropic.ToolUnionParam, error) {
	var out []anthropic.ToolUnionParam
	for _, t := range tools {
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", t.Name, err)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        t.Name,
			Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required},
		}})
	}
	return out, nil
}

// run sends prompt and loops: every tool call the model makes is run
// against the store and its text result returned, until the model answers
// without calling a tool.
func run(ctx context.Context, client anthropic.Client, tools *agenttools.Tools, prompt string) error {
	params, err := toolParams(tools.List())
	if err != nil {
		return err
	}
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}
	for range 30 { // a bound on tool rounds
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     anthropic.Model(envOr("ANTHROPIC_MODEL", "claude-sonnet-4-5")),
			MaxTokens: 2048,
			System:    []anthropic.TextBlockParam{{Text: "You plan and track work with the task tools. Prefer task_create/task_update/task_list for multi-step work."}},
			Messages:  messages,
			Tools:     params,
		})
		if err != nil {
			return err
		}
		messages = append(messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			switch b := block.AsAny().(type) {
			case anthropic.TextBlock:
				fmt.Println(b.Text)
			case anthropic.ToolUseBlock:
				res, err := tools.Call(ctx, b.Name, b.Input)
				if err != nil {
					return err // the harness's problem: ctx done or store closed
				}
				fmt.Printf("  > %s %s\n%s\n", b.Name, b.Input, res.Text)
				results = append(results, anthropic.NewToolResultBlock(b.ID, res.Text, res.IsError))
			}
		}
		if len(results) == 0 {
			return nil
		}
		messages = append(messages, anthropic.NewUserMessage(results...))
	}
	return fmt.Errorf("the model kept calling tools")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		fmt.Fprintln(os.Stderr, "set ANTHROPIC_API_KEY to run this example against Claude")
		os.Exit(2)
	}
	prompt := "Create a task board for refactoring: parse -> transform -> emit -> test, where transform and emit can run in parallel after parse. Then list it."
	if len(os.Args) > 1 {
		prompt = strings.Join(os.Args[1:], " ")
	}
	store, err := taskgraph.Open(".tasks")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	tools := agenttools.New(store, agenttools.WithOwner("claude"))
	if err := run(context.Background(), anthropic.NewClient(), tools, prompt); err != nil {
		log.Fatal(err)
	}
}
