package main

import (
	"encoding/json"
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// The SDK's tool definitions carry the same names and schemas as agenttools.
func TestToolParams(t *testing.T) {
	tools := agenttools.New(taskgraph.NewMemStore()).List()
	params, err := toolParams(tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(params) != len(tools) {
		t.Fatalf("%d params for %d tools", len(params), len(tools))
	}
	for i, p := range params {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		var want, have map[string]any
		json.Unmarshal(tools[i].InputSchema, &want)
		json.Unmarshal(got.InputSchema, &have)
		if got.Name != tools[i].Name || !equalJSON(want, have) {
			t.Errorf("%s: got %s, want %s", tools[i].Name, got.InputSchema, tools[i].InputSchema)
		}
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
