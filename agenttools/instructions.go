// Instructions: how to work a graph with these tools, for the MCP
// server's instructions (read by the client into the model's context).

package agenttools

// Instructions tell a model how to work a task graph with the tools of
// New: claim, read the notes, leave notes, finish, and what to do when
// nothing is ready. taskgraph mcp sends them as the server's
// instructions; agenttools/tokenbudget counts them with the tools.
const Instructions = `This is a task graph shared with other agents and people. Work it like this:
1. task_claim_next claims the most urgent ready task (labels or under narrow it). The claim is a lease that lapses if you stop; the server renews it while you run.
2. Read the task and its notes (task_get): what those before you tried. As you go, task_note what you tried, found, and where you stopped.
3. Finish with task_complete (result: what you did), or task_fail (reason) if it cannot be done, or task_release to give it back.
4. When task_claim_next claims nothing it says why: others are working, so task_wait and then claim again; or the graph is finished, so stop; or it is stalled (tasks failed or are stranded), so stop and tell a person. Never poll in a loop.
Add work with task_plan (keys, after) rather than many task_create calls. Ids are integers.`
