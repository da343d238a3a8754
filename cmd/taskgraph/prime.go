// taskgraph prime: a guide to this graph for AGENTS.md or CLAUDE.md.

package main

import "fmt"

// primeGuide is what taskgraph prime prints: the loop of an agent (or a
// person) working the graph from a shell, with the exit statuses that say
// whether to wait or stop. TestPrime checks every command and flag it
// names against the command table.
const primeGuide = `## Tasks: taskgraph

The work of this project is a task graph in .tasks/, shared with other agents
and people. Run taskgraph from anywhere in the repository; set
TASKGRAPH_OWNER to your name so that your claims are yours.

1. taskgraph next --lease 30m claims the most urgent ready task and prints it
   with the notes of those before you. Its exit status says what to do:
   0 claimed: work on it; 3 nothing ready now, others are working: run
   taskgraph next --wait --lease 30m; 5 finished: stop; 6 finished, but tasks
   failed or are stranded: stop and tell a person.
2. taskgraph show ID shows a task in full. As you go, leave a note for
   whoever comes next: taskgraph note ID "tried X; Y fails because Z".
   Renew a long claim with taskgraph renew ID 30m.
3. Finish: taskgraph done ID --result "what you did", or taskgraph fail ID
   "why" if it cannot be done, or taskgraph release ID to give it back.
4. New work: taskgraph add "subject" --after ID, or a whole plan at once:
   taskgraph plan plan.json ({"tasks": [{"key", "subject", "after": [key]}]}).

Every command takes --json for machine-readable output. In a clone, ids have
twelve digits: %N is their short form (taskgraph show %3).
`

func cmdPrime(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(struct {
			Guide string `json:"guide"`
		}{primeGuide})
	}
	_, err := fmt.Fprint(e.stdout, primeGuide)
	return err
}
