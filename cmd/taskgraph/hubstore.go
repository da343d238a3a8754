// --store https://HOST[:PORT]: the commands on a hub's graph, through the
// hub's API, with the token in $TASKGRAPH_TOKEN.

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/taskgraph-dev/taskgraph/hub"
)

// isHub reports whether --store names a hub rather than a database.
func (e *env) isHub() bool {
	return strings.HasPrefix(e.storeURL, "https://") || strings.HasPrefix(e.storeURL, "http://")
}

// openHub returns a client of the --store hub. Unless --owner or
// $TASKGRAPH_OWNER says otherwise, the owner is the token's name: the one
// an agent's token may act as.
func (e *env) openHub() (*hub.Client, error) {
	tok := os.Getenv("TASKGRAPH_TOKEN")
	if tok == "" {
		return nil, usagef("--store %s is a hub: set TASKGRAPH_TOKEN to one of its tokens (taskgraph token add NAME, run beside its graph, prints one)", e.storeURL)
	}
	c, err := hub.NewClient(e.storeURL, tok)
	if err != nil {
		return nil, usagef("--store: %v", err)
	}
	if !e.ownerSet {
		who, err := c.Whoami(e.ctx)
		if err != nil {
			c.Close()
			return nil, err
		}
		e.owner = who.Name
	}
	return c, nil
}

// withHub runs f on the --store hub's graph.
func (e *env) withHub(f func(s store) error) error {
	c, err := e.openHub()
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// besideFiles refuses a command that works on a graph's files when
// --store names a hub.
func (e *env) besideFiles(name string) error {
	if e.isHub() {
		return usagef("%s works beside the graph's files, and --store %s is a hub: run it on the machine the hub serves from", name, e.storeURL)
	}
	return nil
}

// hubOwner is the name of the token of the hub g serves: the owner an
// MCP server on it acts as unless --owner says otherwise.
func hubOwner(e *env, g *mcpGraph) (string, error) {
	s, err := g.open(e.ctx, false)
	if err != nil {
		return "", err
	}
	c, ok := s.(*hub.Client)
	if !ok {
		return "", fmt.Errorf("--store %s: not a hub's client", e.storeURL)
	}
	who, err := c.Whoami(e.ctx)
	if err != nil {
		return "", err
	}
	return who.Name, nil
}
