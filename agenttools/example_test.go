package agenttools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// A harness offers the tools to a model and runs the calls it makes. The
// model's input is raw JSON and the output is the text to hand back to it;
// the agent identity is fixed by New, so the model cannot claim as someone
// else.
func Example() {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	tools := agenttools.New(store, agenttools.WithOwner("agent-1"))

	// Each tool's Name, Description and InputSchema go into the model's
	// tool definitions.
	var names []string
	for _, t := range tools.List() {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))

	// What the model might call, in order.
	calls := []struct{ name, input string }{
		{"task_create", `{"subject": "Setup project"}`},
		{"task_create", `{"subject": "Write code", "blockedBy": [1]}`},
		{"task_claim", `{"task_id": 2}`}, // blocked: the model is told why
		{"task_claim_next", `{}`},
		{"task_complete", `{"task_id": 1}`},
		{"task_list", `{}`},
	}
	for _, c := range calls {
		out, err := tools.Call(ctx, c.name, json.RawMessage(c.input))
		if err != nil {
			// Only the harness can fix this (store closed, ctx done).
			log.Fatal(err)
		}
		fmt.Printf("> %s\n%s\n", c.name, out)
	}
	// Output:
	// task_create task_update task_list task_get task_plan task_claim task_claim_next task_wait task_complete task_fail task_note task_release task_renew task_delete
	// > task_create
	// {
	//   "id": 1,
	//   "subject": "Setup project",
	//   "description": "",
	//   "status": "pending",
	//   "blockedBy": [],
	//   "blocks": [],
	//   "owner": ""
	// }
	// > task_create
	// {
	//   "id": 2,
	//   "subject": "Write code",
	//   "description": "",
	//   "status": "pending",
	//   "blockedBy": [
	//     1
	//   ],
	//   "blocks": [],
	//   "owner": ""
	// }
	// > task_claim
	// Error: task 2 is blocked by [1]
	// > task_claim_next
	// Claimed #1: Setup project
	// {
	//   "id": 1,
	//   "subject": "Setup project",
	//   "description": "",
	//   "status": "in_progress",
	//   "blockedBy": [],
	//   "blocks": [
	//     2
	//   ],
	//   "owner": "agent-1"
	// }
	// > task_complete
	// Completed #1: Setup project
	// Unblocked: #2 Write code
	// > task_list
	// [x] #1: Setup project @agent-1
	// [ ] #2: Write code
}
