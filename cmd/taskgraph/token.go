// taskgraph token: the tokens of a hub (taskgraph serve's API), kept as
// hashes in a git-ignored file beside the task directory.

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/taskgraph-dev/taskgraph/hub"
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
git-ignored .taskgraph.tokens (with --store, the file --tokens names). A
running hub sees a change at its next request.`

func flagsToken(fs *flag.FlagSet) func(e *env) error {
	role := fs.String("role", string(hub.Agent), "the new token's `ROLE`: agent, viewer or admin")
	file := fs.String("tokens", "", "the tokens `FILE` (default the task directory's .taskgraph.tokens; needed with --store)")
	return func(e *env) error {
		if len(e.args) == 0 {
			return usagef("want add NAME, list or revoke NAME")
		}
		tokens, err := e.tokenFile(*file)
		if err != nil {
			return err
		}
		switch sub := e.args[0]; {
		case sub == "add" && len(e.args) == 2:
			tok, err := tokens.Add(e.args[1], hub.Role(*role))
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
			infos, err := tokens.List()
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
			if err := tokens.Revoke(e.args[1]); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "Token %q revoked\n", e.args[1])
			return nil
		}
		return usagef("want add NAME, list or revoke NAME")
	}
}

// tokenFile returns the tokens of the graph: file if given, else the
// sidecar of the task directory. A --store graph has no directory: it
// needs file.
func (e *env) tokenFile(file string) (*hub.TokenFile, error) {
	if err := e.besideFiles("token"); err != nil {
		return nil, err
	}
	if file != "" {
		return hub.OpenTokenFileAt(file), nil
	}
	if e.storeURL != "" {
		return nil, usagef("with --store, say where the tokens are kept with --tokens FILE (PostgreSQL does not keep them yet)")
	}
	dir, err := e.taskDir()
	if err != nil {
		return nil, err
	}
	return hub.OpenTokenFile(dir), nil
}
