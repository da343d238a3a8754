// Verified completion on the command line: the flags that name a task's
// check and acceptance items.

package main

import (
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// textList is a flag given once per item, each kept whole (commas too):
// acceptance items are sentences.
type textList []string

func (l *textList) String() string { return strings.Join(*l, "; ") }

func (l *textList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// loadChecks reads the graph's checks file: the task directory's, or
// .tasks/checks.json under the working directory for a database or a
// hub (where the checks run).
func (e *env) loadChecks() (*taskgraph.Checks, error) {
	dir := ".tasks"
	if e.storeURL == "" {
		d, err := e.taskDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return taskgraph.LoadChecks(dir)
}
