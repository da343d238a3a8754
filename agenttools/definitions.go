// The definitions of New's tools: each one's name, title, description,
// hints and JSON Schema, and the handler that runs it.

package agenttools

import "encoding/json"

// taskTools defines New's tools, run by h.
func (h handlers) taskTools() []Tool {
	var (
		read       = Hints{ReadOnly: true, Idempotent: true}
		once       = Hints{Idempotent: true}
		additive   = Hints{}
		destroying = Hints{Destructive: true, Idempotent: true}
	)
	return []Tool{
		{"task_create", "Create task", "Create a pending task. blockedBy: tasks that must complete first. A key names it: creating a key again returns the existing task.", schemaCreate, nil, additive, plain(h.create), ""},
		{"task_update", "Update task", "Update a task. Status in_progress claims it for you; you can complete or give back only tasks you hold, and no one else's claim can be changed.", schemaUpdate, nil, once, plain(h.update), ""},
		{"task_list", "List tasks", "List tasks, one a line; in progress and ready first when not all fit.", schemaList, schemaListOut, read, h.list, ""},
		{"task_get", "Get task", "Get a task in full, and why it cannot start if it cannot.", schemaTaskID, schemaGetOut, read, byID(h.get), ""},
		{"task_plan", "Create plan", "Create many tasks in one call, all or none. Tasks name their blockers in after by key (or existing id). Keys that exist are not created again.", schemaPlan, nil, once, plain(h.plan), ""},
		{"task_claim", "Claim task", "Claim a ready task: it becomes in_progress with you as owner.", schemaTaskID, nil, once, plain(byID(h.claim)), ""},
		{"task_claim_next", "Claim next ready task", "Claim the most urgent ready task; else says if all is finished or what it waits on.", schemaClaimNext, schemaNextOut, additive, h.claimNext, ""},
		{"task_wait", "Wait for a task", "Wait until a task is ready for you or all is finished (under a minute); says which.", schemaClaimNext, schemaWaitOut, read, h.wait, ""},
		{"task_complete", "Complete task", "Complete a task you hold; says which tasks this unblocked.", schemaComplete, nil, once, plain(h.complete), ""},
		{"task_fail", "Fail task", "Give up on a task you hold, saying why. Tasks that depend on it cannot start until it is reopened.", schemaFail, nil, once, plain(h.fail), ""},
		{"task_note", "Note on task", "Leave a note on a task for whoever takes it next: what you tried, found, or where you stopped.", schemaNote, nil, additive, plain(h.note), ""},
		{"task_release", "Release task", "Give back a task you hold, for someone else to take.", schemaTaskID, nil, once, plain(byID(h.release)), ""},
		{"task_renew", "Renew lease", "Extend the lease on a task you hold, so that no one else takes it; call it now and then during long work.", schemaRenew, nil, additive, plain(h.renew), ""},
		{"task_delete", "Delete task", "Delete a task no one else holds. detach: true also removes it from the tasks it blocks.", schemaDelete, nil, destroying, plain(h.delete), ""},
	}
}

var (
	schemaList = json.RawMessage(`{"type":"object","properties":{` +
		`"status":{"type":"string","enum":["pending","in_progress","completed","failed","cancelled"]},` +
		`"owner":{"type":"string"},` +
		`"label":{"type":"string"},` +
		`"ready":{"type":"boolean","description":"Only tasks that can start now."},` +
		`"limit":{"type":"integer","description":"Default 15."}}}`)
	schemaTaskID = json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"integer"}},"required":["task_id"]}`)
	// priority and labels are the same on every tool that sets them.
	schemaPriority = `"priority":{"type":"integer","minimum":0,"maximum":4,"description":"0 most urgent, 4 least; default 2."}`
	schemaLabels   = `"labels":{"type":"array","items":{"type":"string"}}`
	schemaCreate   = json.RawMessage(`{"type":"object","properties":{` +
		`"subject":{"type":"string"},"description":{"type":"string"},` +
		`"blockedBy":{"type":"array","items":{"type":"integer"}},` +
		schemaPriority + `,` + schemaLabels + `,"key":{"type":"string"},"parent":{"type":"integer","description":"A task that waits on this one."},` +
		`"check":{"type":"string","description":"A check that must pass to complete it."},"acceptance":{"type":"array","items":{"type":"string"}}},` +
		`"required":["subject"]}`)
	schemaUpdate = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
		`"addBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"addBlocks":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlocks":{"type":"array","items":{"type":"integer"}},` +
		schemaPriority + `,` +
		`"labels":{"type":"array","items":{"type":"string"},"description":"Replaces the labels."},` +
		`"addLinks":{"type":"array","items":{"type":"string"},"description":"Commits, PRs, files or URLs of your work."},` +
		`"owner":{"type":"string","description":"Only \"\" (give back a task you hold) or your own name (take it)."}},` +
		`"required":["task_id"]}`)
	schemaPlan = json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{` +
		`"key":{"type":"string"},"subject":{"type":"string"},"description":{"type":"string"},` +
		`"after":{"type":"array","items":{"type":"string"},"description":"Keys of this plan's tasks, or existing ids as \"#12\"."},` +
		schemaPriority + `,` + schemaLabels + `,` +
		`"parent":{"type":"string","description":"Key of this plan's task (or \"#id\") that waits on this one."},` +
		`"maxAttempts":{"type":"integer","description":"Failures and lapses allowed; a failure retries while some remain."},"backoffSeconds":{"type":"integer"}},` +
		`"required":["key","subject"]}}},"required":["tasks"]}`)
	schemaClaimNext = json.RawMessage(`{"type":"object","properties":{` +
		`"labels":{"type":"array","items":{"type":"string"},"description":"Only tasks with all these labels."},` +
		`"under":{"type":"integer","description":"Only tasks under this one (its children, theirs, ...): work inside one epic."}}}`)
	schemaComplete = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"result":{"type":"string","description":"What you did, for those who come after."}},` +
		`"required":["task_id"]}`)
	schemaFail = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},"reason":{"type":"string"}},` +
		`"required":["task_id","reason"]}`)
	schemaNote = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},"text":{"type":"string"}},` +
		`"required":["task_id","text"]}`)
	schemaRenew = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"seconds":{"type":"integer","description":"Lease length from now; default: a new claim's."}},` +
		`"required":["task_id"]}`)
	schemaDelete = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},"detach":{"type":"boolean"}},` +
		`"required":["task_id"]}`)
)
