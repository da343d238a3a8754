module github.com/taskgraph-dev/taskgraph/agenttools/tokenbudget

go 1.26

replace github.com/taskgraph-dev/taskgraph => ../..

require (
	github.com/taskgraph-dev/taskgraph v0.0.0
	github.com/tiktoken-go/tokenizer v0.10.0
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
