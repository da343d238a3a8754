// Plans: task_plan and ParsePlan, many tasks that name their blockers by
// key, created in one call, all or none.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// planRef is an entry of after: a key, "#12", or an id given as a number.
type planRef string

func (r *planRef) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*r = planRef(s)
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil || n <= 0 {
		return errors.New("not a key or a task id")
	}
	*r = planRef("#" + strconv.FormatInt(n, 10))
	return nil
}

// decodePlanTask decodes one task of a plan with the messages of decode,
// prefixed with where it is.
func decodePlanTask(i int, raw json.RawMessage) (taskgraph.NewTask, error) {
	var (
		key, subject, description *string
		after                     []planRef
		priority                  *priorityArg
		labels                    []string
		maxAttempts, backoff      *int64
		parent, under             *string
	)
	fail := func(err error) (taskgraph.NewTask, error) {
		return taskgraph.NewTask{}, fmt.Errorf("tasks[%d]: %w", i, err)
	}
	if err := decode(raw, field{"key", &key}, field{"subject", &subject}, field{"description", &description},
		field{"after", &after}, field{"priority", &priority}, field{"labels", &labels},
		field{"maxAttempts", &maxAttempts}, field{"backoffSeconds", &backoff}, field{"parent", &parent},
		field{"under", &under}); err != nil {
		return fail(err)
	}
	// under is parent's other name, the word of WithUnder and of the
	// tools' and the command line's filters: either, not both.
	if under != nil {
		if parent != nil {
			return fail(errors.New("parent and under are one field (the task this one is under): give one"))
		}
		parent = under
	}
	if key == nil || *key == "" {
		return fail(errors.New("key is required: every task of a plan has a key, which other tasks name in after"))
	}
	if subject == nil {
		return fail(errors.New("subject is required"))
	}
	nt := taskgraph.NewTask{Key: *key, Subject: *subject, Labels: labels}
	if description != nil {
		nt.Description = *description
	}
	for _, a := range after {
		nt.After = append(nt.After, string(a))
	}
	var err error
	if nt.Priority, err = newPriority(priority); err != nil {
		return fail(err)
	}
	if parent != nil {
		nt.Under = *parent
	}
	if maxAttempts != nil {
		if *maxAttempts < 0 || *maxAttempts > taskgraph.MaxAttemptsLimit {
			return fail(fmt.Errorf("maxAttempts is %d: want 0 (no limit) to %d", *maxAttempts, taskgraph.MaxAttemptsLimit))
		}
		nt.MaxAttempts = int(*maxAttempts)
	}
	if backoff != nil {
		if *backoff < 0 || *backoff > int64(taskgraph.MaxBackoff/time.Second) {
			return fail(fmt.Errorf("backoffSeconds is %d: want 0 to %d", *backoff, int64(taskgraph.MaxBackoff/time.Second)))
		}
		nt.Backoff = time.Duration(*backoff) * time.Second
	}
	return nt, nil
}

// ParsePlan reads a plan in the shape task_plan takes — {"tasks": [{key,
// subject, description, after, priority, labels}, ...]}, or the array
// alone — as the tasks to give taskgraph.Store.CreatePlan. Its errors say
// what is wrong in words a model or a person can act on.
func ParsePlan(data []byte) ([]taskgraph.NewTask, error) {
	var items []json.RawMessage
	if trimmed := strings.TrimSpace(string(data)); strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, fmt.Errorf("the plan is not valid JSON (%s)", strings.TrimPrefix(err.Error(), "json: "))
		}
	} else if err := decode(data, field{"tasks", &items}); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, errors.New("tasks is required: a non-empty array of {key, subject, description, after, priority, labels}")
	}
	plan := make([]taskgraph.NewTask, len(items))
	for i, item := range items {
		nt, err := decodePlanTask(i, item)
		if err != nil {
			return nil, err
		}
		plan[i] = nt
	}
	return plan, nil
}

func (h handlers) plan(ctx context.Context, raw json.RawMessage) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(string(raw)), "[") {
		return "", errors.New(`the input must be an object, {"tasks": [...]}`)
	}
	plan, err := ParsePlan(raw)
	if err != nil {
		return "", err
	}
	if cycle := planCycle(plan); cycle != nil {
		return "", fmt.Errorf("the plan has a dependency cycle, %s: no task of it could ever start; take one of those keys out of after", strings.Join(cycle, " -> "))
	}
	// Which keys exist already, to say which tasks were not created.
	before, _, err := h.listAll(ctx)
	if err != nil {
		return "", err
	}
	existed := map[string]bool{}
	for _, t := range before {
		if t.Key != "" {
			existed[t.Key] = true
		}
	}
	for i := range plan {
		plan[i].CreatedVia = h.cfg.via
	}
	tasks, err := h.store.CreatePlan(ctx, plan)
	if err != nil {
		return "", err
	}
	status := map[taskgraph.ID]taskgraph.Status{}
	for _, t := range before {
		status[t.ID] = t.Status
	}
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	created := 0
	lines := make([]string, len(tasks))
	for i, t := range tasks {
		line := listLine(t, status, nil)
		line = strings.Replace(line, fmt.Sprintf("#%d: ", t.ID), fmt.Sprintf("#%d %s: ", t.ID, t.Key), 1)
		if existed[t.Key] {
			line += " (existed)"
		} else {
			created++
		}
		lines[i] = line
	}
	head := fmt.Sprintf("Created %d %s", created, plural(created, "task", "tasks"))
	if n := len(tasks) - created; n > 0 {
		head += fmt.Sprintf("; %d existed already and %s as %s", n, plural(n, "is", "are"), plural(n, "it was", "they were"))
	}
	return head + ":\n" + strings.Join(lines, "\n"), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// planCycle returns a cycle among the tasks of plan, by key and closed
// ("a -> b -> a"), or nil. Only a plan's own tasks can form one: an
// existing task never waits on a task that does not exist yet.
func planCycle(plan []taskgraph.NewTask) []string {
	after := make(map[string][]string, len(plan))
	for _, t := range plan {
		after[t.Key] = t.After
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(k string) []string
	visit = func(k string) []string {
		state[k] = open
		path = append(path, k)
		for _, b := range after[k] {
			if _, inPlan := after[b]; !inPlan {
				continue
			}
			switch state[b] {
			case open:
				i := slices.Index(path, b)
				return append(slices.Clone(path[i:]), b)
			case unseen:
				if c := visit(b); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[k] = done
		return nil
	}
	for _, t := range plan {
		if state[t.Key] == unseen {
			if c := visit(t.Key); c != nil {
				slices.Reverse(c) // in execution order: blocker first
				return c
			}
		}
	}
	return nil
}
