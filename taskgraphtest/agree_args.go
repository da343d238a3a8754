// This file holds the arguments of Agree's operations: ids, owners,
// subjects, metadata, leases, revisions, priorities, labels, keys and
// references, each decoded from the input, mostly valid and sometimes
// not. What the bytes alone cannot decide (which tasks exist, their
// holder, rev or blockers) is read from the MemStore, so that the
// sequence depends on the input only.

package taskgraphtest

import (
	"fmt"
	"math"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// id returns a task id: half the time one of the tasks that exist, else
// one near the highest allocated, so that most operations name a task that
// exists; sometimes 0, -1 or one not yet allocated.
func (d *driver) id() tg.ID {
	v := tg.ID(d.pick(32))
	switch {
	case v == 0:
		return 0
	case v == 1:
		return -1
	case v == 2:
		return d.hi + 1
	case v == 3:
		return d.hi + 2
	case v >= 16:
		if all, _ := d.ref.List(bg); len(all) > 0 {
			return all[d.pick(len(all))].ID
		}
		fallthrough
	case d.hi == 0:
		return v%12 + 1
	}
	id := d.hi - (v - 4)
	if id < 1 {
		id = 1 + (v-4)%d.hi
	}
	return id
}

// heldID is mostly a task in progress, for the operations of its holder.
func (d *driver) heldID() tg.ID {
	if d.pick(3) > 0 {
		if b, _ := d.ref.Board(bg); len(b.InProgress) > 0 {
			return b.InProgress[d.pick(len(b.InProgress))].ID
		}
	}
	return d.id()
}

// holder returns the arguments of an operation by the holder of a task:
// mostly a task in progress (heldID), and an owner that is often its
// holder (ownerFor).
func (d *driver) holder() (tg.ID, string) {
	id := d.heldID()
	return id, d.ownerFor(id)
}

func (d *driver) ids() []tg.ID {
	out := make([]tg.ID, 1+d.pick(3))
	for i := range out {
		out[i] = d.id()
	}
	return out
}

var owners = []string{"", "a", "a", "a", "b", "b", "agent-ü", "agent-ü"}

func (d *driver) owner() string { return owners[d.pick(len(owners))] }

// ownerFor is often the current owner of task id, else any owner,
// including "".
func (d *driver) ownerFor(id tg.ID) string {
	if v := d.pick(2 * len(owners)); v < len(owners) {
		return owners[v]
	}
	t, _ := d.ref.Get(bg, id)
	return t.Owner
}

func (d *driver) refTask(id tg.ID) tg.Task {
	t, _ := d.ref.Get(bg, id)
	return t
}

func (d *driver) subject() string {
	switch v := d.next(); v % 8 {
	case 0:
		return ""
	case 1:
		return "设置 «schema» & <api>"
	default:
		return fmt.Sprint("task ", v)
	}
}

func (d *driver) metadata() map[string]any {
	switch v := d.next(); v % 8 {
	case 1:
		return map[string]any{"k": "v"}
	case 2:
		return map[string]any{"k": nil, "n": nil}
	case 3:
		return map[string]any{"n": int(v)}
	case 4:
		return map[string]any{"nested": map[string]any{"list": []any{1, "x", true}}, "k": 2.5}
	case 5:
		return map[string]any{"bad": math.NaN()}
	case 6:
		return map[string]any{}
	}
	return nil
}

var reasons = []string{"crashed", "not needed", "", "bad \xff"}

// reason is the reason of a Fail or a Cancel, sometimes "" or not UTF-8.
func (d *driver) reason() string { return reasons[d.pick(len(reasons))] }

var leases = []time.Duration{
	0, 0, 0, 0, 0, 0, 0, 0, // no option
	0, time.Second, time.Second, time.Second, 3 * time.Second, 3 * time.Second, 10 * time.Second, -time.Second,
}

// lease returns claim options: none, or WithLease with a lease that may be
// 0 or negative.
func (d *driver) lease() ([]tg.ClaimOption, string) {
	v := d.pick(len(leases))
	if v < 8 {
		return nil, ""
	}
	return []tg.ClaimOption{tg.WithLease(leases[v])}, fmt.Sprintf(", WithLease(%v)", leases[v])
}

// claimNextArgs returns the arguments of ClaimNext: an owner, and
// options (a lease, labels) with their text.
func (d *driver) claimNextArgs() (string, []tg.ClaimOption, string) {
	owner := d.owner()
	opts, desc := d.lease()
	opts, desc = d.withLabels(opts, desc)
	if d.pick(6) == 0 {
		under := d.id()
		opts, desc = append(opts, tg.WithUnder(under)), desc+fmt.Sprintf(", WithUnder(%d)", under)
	}
	return owner, opts, desc
}

// withLabels sometimes adds WithLabels to claim options.
func (d *driver) withLabels(opts []tg.ClaimOption, desc string) ([]tg.ClaimOption, string) {
	if d.pick(3) > 0 {
		return opts, desc
	}
	labels := d.labels()
	return append(opts, tg.WithLabels(labels...)), desc + fmt.Sprintf(", WithLabels(%q)", labels)
}

// ifRev is a Patch.IfRev for task id: none (0), its rev, the one before
// it, or 99.
func (d *driver) ifRev(id tg.ID) int64 {
	switch d.pick(5) {
	case 1, 2:
		return d.refTask(id).Rev
	case 3:
		return max(d.refTask(id).Rev-1, 1)
	case 4:
		return 99
	}
	return 0
}

var statuses = []tg.Status{tg.Pending, tg.InProgress, tg.InProgress, tg.Completed, "done", tg.Failed, tg.Cancelled, tg.Pending}

// Priorities, labels, keys and references: mostly valid, sometimes not.
var (
	agreeLabels = []string{"a", "b", "frontend", "a", "b", "Bad Label"}
	agreeKeys   = []string{"k1", "k2", "k3", "schema", "api", "k1", "12", "#3", "tab\tkey"}
)

// priority is nil (the default) or a priority, sometimes out of range.
func (d *driver) priority() *tg.Priority {
	v := d.pick(8)
	if v >= 6 {
		return nil
	}
	p := tg.PriorityLevel(v) // 5: refused
	return &p
}

// newPriority is a new task's priority: as priority, nil being the
// default, P2 (the zero value).
func (d *driver) newPriority() tg.Priority {
	if p := d.priority(); p != nil {
		return *p
	}
	return tg.DefaultPriority
}

// labels returns 0 to 3 labels, sometimes repeated or malformed.
func (d *driver) labels() []string {
	n := d.pick(4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = agreeLabels[d.pick(len(agreeLabels))]
	}
	return out
}

func (d *driver) key() string { return agreeKeys[d.pick(len(agreeKeys))] }

// reference returns a reference for NewTask.After: a key (of the plan, of a
// task, or of none), an id in either form, or something refused.
func (d *driver) reference(plan []string) string {
	switch v := d.pick(10); {
	case v < 4 && len(plan) > 0:
		return plan[d.pick(len(plan))]
	case v < 6:
		return d.key()
	case v == 6:
		return fmt.Sprint("#", d.id())
	case v == 7:
		return fmt.Sprint(d.id())
	case v == 8:
		return "nope"
	}
	return ""
}

func (d *driver) references(plan []string) []string {
	n := d.pick(4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.reference(plan)
	}
	return out
}
