// Access: what a token may do, written once, as a Store that does only
// that. The API's handlers and the MCP tools at /mcp both go through it,
// so that the two can never differ.

package hub

import (
	"context"
	"fmt"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// need is what a call needs of a token's role.
type need int

const (
	read  need = iota // any role
	write             // an agent or an admin
	admin             // an admin only
)

// may checks that who's role allows what a call needs.
func (who Identity) may(n need) error {
	switch {
	case n == write && who.Role == Viewer:
		return fmt.Errorf("%w: %q is a viewer's token, which reads only", ErrForbidden, who.Name)
	case n == admin && who.Role != Admin:
		return fmt.Errorf("%w: only an admin's token may do this, and %q's role is %s", ErrForbidden, who.Name, who.Role)
	}
	return nil
}

// owns checks that an agent acts as itself: owner must be "" or its
// name. An admin may name anyone.
func (who Identity) owns(field, owner string) error {
	if who.Role == Agent && owner != "" && owner != who.Name {
		return fmt.Errorf("%w: %s %q: an agent's token acts only as its own owner, %q (or give none)", ErrForbidden, field, owner, who.Name)
	}
	return nil
}

// owner checks that who may write as owner, and returns the owner the
// store is to see: an agent's own name ("" is its name), an admin's
// owner as given ("" is anyone).
func (who Identity) owner(field, owner string) (string, error) {
	if err := who.may(write); err != nil {
		return "", err
	}
	if err := who.owns(field, owner); err != nil {
		return "", err
	}
	if who.Role == Agent {
		return who.Name, nil
	}
	return owner, nil
}

// As returns store as who may use it: every call who's role does not
// allow, or that names an owner an agent's token may not act as, is
// refused with ErrForbidden before it reaches store, and nothing
// changes. It is what the hub's API and its MCP tools serve. Close does
// not close store.
func As(store Store, who Identity) Store { return &guarded{s: store, who: who} }

// guarded is store as one identity may use it.
type guarded struct {
	s   Store
	who Identity
}

func (g *guarded) Get(ctx context.Context, id tg.ID) (tg.Task, error) { return g.s.Get(ctx, id) }

func (g *guarded) List(ctx context.Context, fs ...tg.Filter) ([]tg.Task, error) {
	return g.s.List(ctx, fs...)
}

func (g *guarded) Board(ctx context.Context, fs ...tg.Filter) (tg.Board, error) {
	return g.s.Board(ctx, fs...)
}

func (g *guarded) Limits(ctx context.Context) (map[string]int, error) { return g.s.Limits(ctx) }

func (g *guarded) Watch(ctx context.Context) (<-chan tg.Event, error) { return g.s.Watch(ctx) }

func (g *guarded) Create(ctx context.Context, nt tg.NewTask) (tg.Task, error) {
	if err := g.who.may(write); err != nil {
		return tg.Task{}, err
	}
	if err := g.who.owns("Owner", nt.Owner); err != nil {
		return tg.Task{}, err
	}
	return g.s.Create(ctx, nt)
}

func (g *guarded) CreatePlan(ctx context.Context, nts []tg.NewTask) ([]tg.Task, error) {
	if err := g.who.may(write); err != nil {
		return nil, err
	}
	for i, nt := range nts {
		if err := g.who.owns(fmt.Sprintf("[%d].Owner", i), nt.Owner); err != nil {
			return nil, err
		}
	}
	return g.s.CreatePlan(ctx, nts)
}

func (g *guarded) Update(ctx context.Context, id tg.ID, p tg.Patch) (tg.Task, error) {
	if err := g.who.may(write); err != nil {
		return tg.Task{}, err
	}
	if g.who.Role != Admin && (p.Status != nil || p.Owner != nil) {
		return tg.Task{}, fmt.Errorf("%w: an agent's token may not set a task's status or owner with an edit: claim, complete, fail or release it", ErrForbidden)
	}
	return g.s.Update(ctx, id, p)
}

func (g *guarded) Claim(ctx context.Context, id tg.ID, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.Claim(ctx, id, owner, opts...)
}

func (g *guarded) ClaimNext(ctx context.Context, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.ClaimNext(ctx, owner, opts...)
}

func (g *guarded) Renew(ctx context.Context, id tg.ID, owner string, ttl time.Duration) (tg.Task, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.Renew(ctx, id, owner, ttl)
}

func (g *guarded) Complete(ctx context.Context, id tg.ID, owner string, opts ...tg.CompleteOption) (tg.Completion, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Completion{}, err
	}
	if set, err := tg.Rules.CompleteOptions(opts); err == nil && set.SkipCheck && g.who.Role == Agent {
		return tg.Completion{}, fmt.Errorf("%w: an agent's token may not skip a task's check (%q is an agent): report passing evidence, or have a person complete it with --no-verify", ErrForbidden, g.who.Name)
	}
	return g.s.Complete(ctx, id, owner, opts...)
}

func (g *guarded) Fail(ctx context.Context, id tg.ID, owner, reason string) (tg.Task, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.Fail(ctx, id, owner, reason)
}

func (g *guarded) Release(ctx context.Context, id tg.ID, owner string) (tg.Task, error) {
	owner, err := g.who.owner("Owner", owner)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.Release(ctx, id, owner)
}

func (g *guarded) Note(ctx context.Context, id tg.ID, author, text string) (tg.Task, error) {
	author, err := g.who.owner("Author", author)
	if err != nil {
		return tg.Task{}, err
	}
	return g.s.Note(ctx, id, author, text)
}

func (g *guarded) Cancel(ctx context.Context, id tg.ID, reason string) (tg.Task, error) {
	if err := g.who.may(admin); err != nil {
		return tg.Task{}, err
	}
	return g.s.Cancel(ctx, id, reason)
}

func (g *guarded) Reopen(ctx context.Context, id tg.ID) (tg.Task, error) {
	if err := g.who.may(admin); err != nil {
		return tg.Task{}, err
	}
	return g.s.Reopen(ctx, id)
}

func (g *guarded) Delete(ctx context.Context, id tg.ID, opts ...tg.DeleteOption) error {
	if err := g.who.may(admin); err != nil {
		return err
	}
	return g.s.Delete(ctx, id, opts...)
}

func (g *guarded) SetLimit(ctx context.Context, label string, n int) error {
	if err := g.who.may(admin); err != nil {
		return err
	}
	return g.s.SetLimit(ctx, label, n)
}

func (g *guarded) LivenessDefaults(ctx context.Context) (map[string]tg.LivenessDefault, error) {
	return g.s.LivenessDefaults(ctx)
}

func (g *guarded) SetLivenessDefault(ctx context.Context, label string, d tg.LivenessDefault) error {
	if err := g.who.may(admin); err != nil {
		return err
	}
	return g.s.SetLivenessDefault(ctx, label, d)
}

func (g *guarded) Load(ctx context.Context, ts []tg.Task) error {
	if err := g.who.may(admin); err != nil {
		return err
	}
	return g.s.Load(ctx, ts)
}

// Close does nothing: the store is the hub's, not the caller's.
func (g *guarded) Close() error { return nil }
