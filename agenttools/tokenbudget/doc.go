// Package tokenbudget holds the token-budget test of the task tools: it
// counts, with a real tokenizer that runs offline (tiktoken's o200k_base
// vocabulary, embedded in github.com/tiktoken-go/tokenizer; nothing is
// downloaded), what the tool definitions and a task_list over a 500-task
// graph cost a model's context, and fails when they outgrow their budgets.
//
// It is a module of its own so that the tokenizer never becomes a
// dependency of taskgraph. Run it with
//
//	cd agenttools/tokenbudget && go test -v ./...
package tokenbudget
