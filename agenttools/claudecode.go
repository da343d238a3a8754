// Claude Code's task tools (TaskCreate, TaskGet, TaskUpdate, TaskList), in
// its names and argument shapes, under the same claim rules as New's.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// ClaudeCode returns Claude Code's four task tools — TaskCreate, TaskGet,
// TaskUpdate and TaskList — with its names and argument shapes (ids are
// strings such as "3"; subject, description, activeForm, status with
// "deleted", addBlocks, addBlockedBy, owner, metadata), over store, so that
// a model trained on them can use a shared, durable, cycle-checked graph.
//
// They keep the guarantees of the tools of New: an id that does not exist
// and an edge that would close a cycle are refused, and the owner is the
// identity given with WithOwner — TaskUpdate's owner argument may only be
// that identity (take the task) or "" (give it back), and no call changes
// the status or owner of a task another identity holds or completed.
// TaskUpdate also takes removeBlockedBy and removeBlocks, which Claude
// Code's does not, so that edges can be taken out again. activeForm is kept
// in the task's metadata under "activeForm", where the claudecode package
// puts it on import. Status "deleted" deletes the task and takes it out of
// the blockedBy of the tasks it blocked, as Claude Code does. TaskList
// shows at most 50 tasks, in progress and ready first, and says how many
// it left out.
func ClaudeCode(store taskgraph.Store, opts ...Option) *Tools {
	h := newHandlers(store, opts)
	return h.bind([]Tool{
		{"TaskCreate", "Create task", "Create a task in the shared task list. It starts pending, with no owner.", schemaCCCreate, nil, Hints{}, plain(h.ccCreate), ""},
		{"TaskGet", "Get task", "Get a task by ID: description, status, owner, dependencies, and why it cannot start if it cannot.", schemaCCGet, nil, Hints{ReadOnly: true, Idempotent: true}, plain(h.ccGet), ""},
		{"TaskUpdate", "Update task", "Update a task. Status in_progress claims it for you; you can complete or give back only tasks you hold. Status deleted deletes it and its dependency edges.", schemaCCUpdate, nil, Hints{Destructive: true, Idempotent: true}, plain(h.ccUpdate), ""},
		{"TaskList", "List tasks", "List the tasks: id, status, subject, owner and unfinished blockers.", schemaCCList, nil, Hints{ReadOnly: true, Idempotent: true}, plain(h.ccList), ""},
	})
}

var (
	schemaCCCreate = json.RawMessage(`{"type":"object","properties":{` +
		`"subject":{"type":"string","description":"A brief title for the task"},` +
		`"description":{"type":"string","description":"What needs to be done"},` +
		`"activeForm":{"type":"string","description":"Present continuous form shown in spinner when in_progress (e.g., \"Running tests\")"},` +
		`"metadata":{"type":"object","description":"Arbitrary metadata to attach to the task"}},` +
		`"required":["subject","description"],"additionalProperties":false}`)
	schemaCCGet = json.RawMessage(`{"type":"object","properties":{` +
		`"taskId":{"type":"string","description":"The ID of the task to retrieve"}},` +
		`"required":["taskId"],"additionalProperties":false}`)
	schemaCCUpdate = json.RawMessage(`{"type":"object","properties":{` +
		`"taskId":{"type":"string","description":"The ID of the task to update"},` +
		`"subject":{"type":"string","description":"New subject for the task"},` +
		`"description":{"type":"string","description":"New description for the task"},` +
		`"activeForm":{"type":"string","description":"Present continuous form shown in spinner when in_progress (e.g., \"Running tests\")"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed","deleted"],"description":"New status for the task"},` +
		`"addBlocks":{"type":"array","items":{"type":"string"},"description":"Task IDs that this task blocks"},` +
		`"addBlockedBy":{"type":"array","items":{"type":"string"},"description":"Task IDs that block this task"},` +
		`"removeBlocks":{"type":"array","items":{"type":"string"},"description":"Task IDs that this task no longer blocks"},` +
		`"removeBlockedBy":{"type":"array","items":{"type":"string"},"description":"Task IDs that no longer block this task"},` +
		`"owner":{"type":"string","description":"Only your own name (take the task) or \"\" (give it back)"},` +
		`"metadata":{"type":"object","description":"Metadata keys to merge into the task. Set a key to null to delete it."}},` +
		`"required":["taskId"],"additionalProperties":false}`)
	schemaCCList = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
)

// stringID is a task id as Claude Code's tools write it: a string of
// digits ("3"). "#3" and the number 3 are taken too.
type stringID int64

func (s *stringID) UnmarshalJSON(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	var text string
	switch v := v.(type) {
	case string:
		text = strings.TrimSpace(v)
	case float64:
		text = strings.TrimSpace(string(data))
	default:
		return errors.New("not a task id")
	}
	id, err := taskgraph.ParseID(text)
	if err != nil {
		return err
	}
	*s = stringID(id)
	return nil
}

// ccIDs converts ids decoded from the model's input.
func ccIDs(ids []stringID) []taskgraph.ID {
	if len(ids) == 0 {
		return nil
	}
	out := make([]taskgraph.ID, len(ids))
	for i, id := range ids {
		out[i] = taskgraph.ID(id)
	}
	return out
}

// ccID checks the taskId argument.
func ccID(id *stringID) (taskgraph.ID, error) {
	if id == nil {
		return 0, errors.New("taskId is required")
	}
	return taskgraph.ID(*id), nil
}

// hashIDs writes ids as Claude Code does: "#1, #2".
func hashIDs(ids []taskgraph.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "#" + strconv.FormatInt(int64(id), 10)
	}
	return strings.Join(parts, ", ")
}

// withActiveForm returns metadata with activeForm, when it is given, under
// "activeForm", where the claudecode package keeps it.
func withActiveForm(metadata map[string]any, activeForm *string) map[string]any {
	if activeForm == nil {
		return metadata
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata["activeForm"] = *activeForm
	return metadata
}

func (h handlers) ccCreate(ctx context.Context, raw json.RawMessage) (string, error) {
	var (
		subject, description, activeForm *string
		metadata                         map[string]any
	)
	if err := decode(raw, field{"subject", &subject}, field{"description", &description},
		field{"activeForm", &activeForm}, field{"metadata", &metadata}); err != nil {
		return "", err
	}
	if subject == nil {
		return "", errors.New("subject is required")
	}
	nt := taskgraph.NewTask{Subject: *subject}
	if description != nil {
		nt.Description = *description
	}
	for k, v := range metadata {
		if v != nil {
			if nt.Metadata == nil {
				nt.Metadata = map[string]any{}
			}
			nt.Metadata[k] = v
		}
	}
	nt.Metadata = withActiveForm(nt.Metadata, activeForm)
	nt.CreatedVia = h.cfg.via
	t, err := h.store.Create(ctx, nt)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Task #%d created successfully: %s", t.ID, t.Subject), nil
}

func (h handlers) ccGet(ctx context.Context, raw json.RawMessage) (string, error) {
	tid, err := decodeID(raw, "taskId", ccID)
	if err != nil {
		return "", err
	}
	t, err := h.store.Get(ctx, tid)
	if err != nil {
		return "", err
	}
	lines := []string{
		fmt.Sprintf("Task #%d: %s", t.ID, t.Subject),
		"Status: " + string(t.Status),
		"Description: " + t.Description,
	}
	if t.Owner != "" {
		lines = append(lines, "Owner: "+t.Owner)
	}
	// As in Claude Code, "Blocked by" lists what still blocks the task:
	// not a blocker that completed.
	ex, err := h.explainPending(ctx, t)
	if err != nil {
		return "", err
	}
	if ex != nil {
		var open []taskgraph.ID
		for _, b := range ex.Waiting {
			open = append(open, b.ID)
		}
		if open = append(open, ex.Missing...); len(open) > 0 {
			slices.Sort(open)
			lines = append(lines, "Blocked by: "+hashIDs(open))
		}
	}
	if len(t.Blocks) > 0 {
		lines = append(lines, "Blocks: "+hashIDs(t.Blocks))
	}
	if len(t.Metadata) > 0 {
		data, _ := json.Marshal(t.Metadata) // came from JSON
		lines = append(lines, "Metadata: "+string(data))
	}
	if ex != nil {
		lines = append(lines, "Why it cannot start: "+whyText(ex))
	}
	return strings.Join(lines, "\n"), nil
}

func (h handlers) ccUpdate(ctx context.Context, raw json.RawMessage) (string, error) {
	var (
		subject, description, activeForm, owner *string
		status                                  *string
		addBy, rmBy, add, rm                    []stringID
		metadata                                map[string]any
	)
	tid, err := decodeID(raw, "taskId", ccID, field{"subject", &subject}, field{"description", &description},
		field{"activeForm", &activeForm}, field{"status", &status}, field{"addBlocks", &add},
		field{"addBlockedBy", &addBy}, field{"removeBlocks", &rm}, field{"removeBlockedBy", &rmBy},
		field{"owner", &owner}, field{"metadata", &metadata})
	if err != nil {
		return "", err
	}
	// The fields that change, in the order of the schema, for the reply.
	var changed []string
	note := func(name string, set bool) {
		if set {
			changed = append(changed, name)
		}
	}
	note("subject", subject != nil)
	note("description", description != nil)
	note("activeForm", activeForm != nil)
	note("status", status != nil)
	note("addBlocks", len(add) > 0)
	note("addBlockedBy", len(addBy) > 0)
	note("removeBlocks", len(rm) > 0)
	note("removeBlockedBy", len(rmBy) > 0)
	note("owner", owner != nil)
	note("metadata", len(metadata) > 0)
	if status != nil && *status == "deleted" {
		if len(changed) > 1 {
			return "", errors.New("status deleted cannot be combined with other changes: the task is deleted")
		}
		return h.ccDelete(ctx, tid)
	}
	in := updateInput{id: tid, owner: owner}
	if status != nil {
		// deleted, Claude Code's word for deleting it, was handled above.
		s, err := taskgraph.ParseStatus(*status, taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed, "deleted")
		if err != nil {
			return "", err
		}
		in.status = &s
	}
	in.fields = taskgraph.Patch{Subject: subject, Description: description, Metadata: metadata,
		AddBlockedBy: ccIDs(addBy), RemoveBlockedBy: ccIDs(rmBy), AddBlocks: ccIDs(add), RemoveBlocks: ccIDs(rm)}
	in.fields.Metadata = withActiveForm(in.fields.Metadata, activeForm)
	if _, err := h.apply(ctx, in, "TaskUpdate and status in_progress"); err != nil {
		return "", err
	}
	if len(changed) == 0 {
		return fmt.Sprintf("No changes to task #%d", tid), nil
	}
	return fmt.Sprintf("Updated task #%d %s", tid, strings.Join(changed, ", ")), nil
}

// ccDelete deletes a task that no other identity holds or completed, and
// takes it out of the blockedBy of the tasks it blocked.
func (h handlers) ccDelete(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.deletable(ctx, id)
	if err != nil {
		return "", err
	}
	if err := h.store.Delete(ctx, id, taskgraph.Detach()); err != nil {
		return "", err
	}
	out := fmt.Sprintf("Updated task #%d deleted", id)
	if len(t.Blocks) > 0 {
		out += "; it no longer blocks " + hashIDs(t.Blocks)
	}
	return out, nil
}

func (h handlers) ccList(ctx context.Context, raw json.RawMessage) (string, error) {
	if err := decode(raw); err != nil {
		return "", err
	}
	all, corrupt, err := h.listAll(ctx)
	if err != nil {
		return "", err
	}
	if len(all) == 0 && corrupt == nil {
		return "No tasks found", nil
	}
	sel := selectTasks(all, listInput{limit: ccListLimit})
	var lines []string
	for _, t := range sel.shown {
		line := fmt.Sprintf("#%d [%s] %s", t.ID, t.Status, t.Subject)
		if t.Owner != "" {
			line += " (" + t.Owner + ")"
		}
		if open := OpenBlockers(t, sel.board.status); len(open) > 0 && t.Status == taskgraph.Pending {
			line += " [blocked by " + hashIDs(open) + "]"
		}
		lines = append(lines, line)
	}
	if len(sel.hidden) > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more: %s (TaskGet shows any task by ID)", len(sel.hidden), countByStatus(sel.hidden)))
	}
	if corrupt != nil {
		lines = append(lines, unreadable(corrupt))
	}
	return strings.Join(lines, "\n"), nil
}
