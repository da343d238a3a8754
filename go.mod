module github.com/taskgraph/taskgraph

go 1.25.0

require (
	github.com/fsnotify/fsnotify v1.9.0
	github.com/gofrs/flock v0.13.1
	github.com/google/renameio/v2 v2.0.2
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
