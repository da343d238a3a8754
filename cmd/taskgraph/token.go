// taskgraph token: the tokens of a hub (taskgraph serve's API), kept as
// hashes in a git-ignored file beside the task directory, or in the
// --store database beside the graph.

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/hub/pgtokens"
)

// tokenHelp is the help of taskgraph token.
const tokenHelp = `Manage the tokens of the hub's API and MCP (taskgraph serve): every
request to /v1/ and /mcp must carry one, as "Authorization: Bearer TOKEN".

  token add NAME [--role agent|viewer|admin]   print a new token, once
  token list                                   the tokens' names and roles
  token revoke NAME                            refuse that token from now on

An agent's token (the default role) acts only as its own owner, NAME: a
request naming another owner is refused. A viewer reads; an admin may also
set limits, delete, cancel, reopen, edit status and owner, and release
others' claims. Only a hash of each token is kept, in the task directory's
git-ignored .taskgraph.tokens; with --store, in the database, beside the
graph (or in the file --tokens names). A running hub sees a change at its
next request.`

func flagsToken(fs *flag.FlagSet) func(e *env) error {
	role := fs.String("role", string(hub.Agent), "the new token's `ROLE`: agent, viewer or admin")
	file := fs.String("tokens", "", "keep the tokens in `FILE` (default the task directory's .taskgraph.tokens, or with --store the database)")
	return func(e *env) error {
		if len(e.args) == 0 {
			return usagef("want add NAME, list or revoke NAME")
		}
		tokens, done, err := e.tokenStore(*file)
		if err != nil {
			return err
		}
		defer done()
		switch sub := e.args[0]; {
		case sub == "add" && len(e.args) == 2:
			tok, err := tokens.Add(e.ctx, e.args[1], hub.Role(*role))
			if err != nil {
				return err
			}
			if e.json {
				return json.NewEncoder(e.stdout).Encode(map[string]string{"name": e.args[1], "role": *role, "token": tok})
			}
			fmt.Fprintln(e.stdout, tok)
			fmt.Fprintf(e.stderr, "Token %q (%s) added; it is shown only now: give it to the agent as TASKGRAPH_TOKEN\n", e.args[1], *role)
			return nil
		case sub == "list" && len(e.args) == 1:
			infos, err := tokens.List(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				type row struct {
					Name    string    `json:"name"`
					Role    hub.Role  `json:"role"`
					Created time.Time `json:"created"`
				}
				rows := []row{}
				for _, i := range infos {
					rows = append(rows, row{i.Name, i.Role, i.Created})
				}
				return json.NewEncoder(e.stdout).Encode(rows)
			}
			for _, i := range infos {
				fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", i.Name, i.Role, i.Created.Local().Format(time.RFC3339))
			}
			return nil
		case sub == "revoke" && len(e.args) == 2:
			if err := tokens.Revoke(e.ctx, e.args[1]); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "Token %q revoked\n", e.args[1])
			return nil
		}
		return usagef("want add NAME, list or revoke NAME")
	}
}

// tokenStore returns the tokens of the graph — file if given, else the
// sidecar of the task directory, or the table of the --store database
// (package hub/pgtokens) — and a func that releases them.
func (e *env) tokenStore(file string) (hub.TokenStore, func(), error) {
	nothing := func() {}
	if err := e.besideFiles("token"); err != nil {
		return nil, nothing, err
	}
	if file != "" {
		return hub.OpenTokenFileAt(file), nothing, nil
	}
	if e.storeURL != "" {
		cfg, err := pgxpool.ParseConfig(e.storeURL)
		if err != nil {
			return nil, nothing, usagef("--store: %v", err)
		}
		cfg.MaxConns = 2 // a few small queries; the graph has its own pool
		pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
		if err != nil {
			return nil, nothing, fmt.Errorf("--store: %w", err)
		}
		tokens, err := pgtokens.Open(e.ctx, pool, e.graph)
		if errors.Is(err, taskgraph.ErrNotFound) {
			pool.Close()
			return nil, nothing, noGraphError{fmt.Sprintf("no graph %q in the --store database, so no tokens for it; run `taskgraph init` with the same --store and --graph", e.graph)}
		}
		if err != nil {
			pool.Close()
			return nil, nothing, err
		}
		return tokens, pool.Close, nil
	}
	dir, err := e.taskDir()
	if err != nil {
		return nil, nothing, err
	}
	return hub.OpenTokenFile(dir), nothing, nil
}
