// Work: the worker loop that claims, renews and finishes tasks.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// WorkFunc does one task. It should stop when ctx is done: ctx is also
// cancelled when the claim is lost (its lease could not be renewed), and
// context.Cause(ctx) then says why.
type WorkFunc func(ctx context.Context, t Task) error

// WorkOption configures Work.
type WorkOption func(*workConfig)

type workConfig struct {
	lease  time.Duration
	poll   time.Duration
	labels []string
	under  ID
	checks *Checks
}

// WorkLabels makes Work take only tasks that carry every one of labels
// (see WithLabels): an agent with a role.
func WorkLabels(labels ...string) WorkOption {
	return func(c *workConfig) { c.labels = append(c.labels, labels...) }
}

// WorkUnder makes Work (and Await) take only the tasks under parent: its
// children, their children, and so on (see WithUnder), not parent itself,
// which waits on them: an agent working inside one epic. They are done
// when the tasks under parent are (Board.Finished of
// Board(Under(parent))), whatever else the graph holds. A parent that
// does not exist is an error (ErrNotFound), not work done.
func WorkUnder(parent ID) WorkOption {
	return func(c *workConfig) { c.under = parent }
}

// WorkLease sets the lease of each claim Work makes (default one minute).
// Work renews it every third of ttl while the task runs, so a crashed agent
// holds its task for at most ttl.
func WorkLease(ttl time.Duration) WorkOption {
	return func(c *workConfig) { c.lease = ttl }
}

// WorkPoll sets how often Work looks for work on a store that does not
// implement Watcher (default one second). On a Watcher it waits for events.
func WorkPoll(d time.Duration) WorkOption {
	return func(c *workConfig) { c.poll = d }
}

// Work is an agent's loop in one call. It claims the next ready task for
// owner with a lease, renews the lease while fn runs, and completes the
// task when fn returns nil; then it takes the next. When nothing is ready
// it waits — for a change on a Watcher store, subscribed before each claim
// so that no wake-up is lost, and for the first lease that lapses — and it
// returns once the graph is finished (Board.Finished: nothing ready,
// blocked or in progress; stranded tasks cannot run; with WorkUnder, the
// tasks under its parent): nil if every task completed or was cancelled,
// or a *StalledError (matching ErrStalled) naming the failed and stranded
// tasks that no agent can go on with. A task held back by a concurrency
// limit is looked at again within 16 seconds of the limit being raised,
// which sends no event.
//
// If fn returns an error, Work fails the task with the error's text as the
// reason (its dependents are then stranded until someone reopens it) and
// goes on; a reason the store refuses (not UTF-8, say) releases the task
// instead. If ctx is done, Work stops: a task whose fn returned nil is
// still completed, one whose fn returned an error is released, not failed.
// If the lease is lost while fn runs (another agent took the task after it
// lapsed), fn's ctx is cancelled and Work goes on without completing it.
// Work returns ctx's error when ctx is done, and any error of the store as
// it is.
func Work(ctx context.Context, s Store, owner string, fn WorkFunc, opts ...WorkOption) error {
	cfg, err := workSettings(opts)
	if err != nil {
		return err
	}
	if owner == "" {
		return fmt.Errorf("taskgraph: Work needs an owner: %w", ErrInvalid)
	}
	// One subscription for the whole loop, opened before the first claim:
	// a change after it is delivered even while fn runs.
	events, stop, err := subscribe(ctx, s)
	if err != nil {
		return err
	}
	defer stop()
	for {
		drain(events)
		asked := time.Now()
		t, err := s.ClaimNext(ctx, owner, WithLease(cfg.lease), WithLabels(cfg.labels...), WithUnder(cfg.under))
		switch {
		case err == nil:
			if err := workOn(ctx, s, owner, t, fn, cfg); err != nil {
				return err
			}
			continue
		case !errors.Is(err, ErrNoReady):
			return err
		}
		b, err := awaitWork(ctx, s, &events, cfg, asked)
		if err != nil {
			return err
		}
		if b.Finished() {
			return b.Stall()
		}
	}
}

// Await blocks until a task Work would claim is ready (one carrying every
// label given with WorkLabels, under the parent of WorkUnder), or the
// graph (with WorkUnder, what is under its parent) is finished
// (Board.Finished), or ctx is done, and returns the board it saw then —
// of the tasks Work would claim, or when finished the whole one:
// the blocking wait of an agent that claims by itself. It waits as Work
// does — for a change on a Watcher store, subscribed before it looks so
// that no wake-up is lost, and for the first lease that lapses; on other
// stores it polls (WorkPoll). A bound on the wait is a deadline on ctx;
// Await then returns ctx's error.
func Await(ctx context.Context, s Store, opts ...WorkOption) (Board, error) {
	cfg, err := workSettings(opts)
	if err != nil {
		return Board{}, err
	}
	events, stop, err := subscribe(ctx, s)
	if err != nil {
		return Board{}, err
	}
	defer stop()
	// A lease that had lapsed before the call, by this machine's clock, is
	// looked at again within lapseRecheck rather than at once: the caller
	// has usually just failed to claim it, the store's clock being behind,
	// and would otherwise spin.
	return awaitWork(ctx, s, &events, cfg, time.Now())
}

// subscribe watches s if it is a Watcher (events is nil otherwise) until
// stop is called or ctx is done.
func subscribe(ctx context.Context, s Store) (events <-chan Event, stop func(), err error) {
	w, ok := s.(Watcher)
	if !ok {
		return nil, func() {}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	if events, err = w.Watch(wctx); err != nil {
		cancel()
		return nil, nil, err
	}
	return events, cancel, nil
}

// awaitWork returns the board once a task for cfg's labels can be
// claimed — it is ready, or its lease lapsed after since (a ClaimNext at
// since saw the earlier lapses), or a lease that lapsed earlier by this
// machine's clock is due to be looked at again (lapseRecheck) — or the
// graph is finished, waiting between looks. *events becomes nil if the
// watch ends, so that the caller polls from then on.
func awaitWork(ctx context.Context, s Store, events *<-chan Event, cfg workConfig, since time.Time) (Board, error) {
	due := false // a lease lapsed, by this clock or the store's: look, and let the caller claim
	limitWait := limitRecheck
	for {
		drain(*events)
		// The tasks this agent could take (its labels, under its
		// parent), held back by limits as its ClaimNext would be
		// (Board.Limited): a task ready here is one it can claim.
		b, err := s.Board(ctx, Under(cfg.under), HasLabels(cfg.labels...))
		if err != nil {
			return Board{}, err
		}
		now := time.Now()
		lapsed := func(t Task) bool { at := t.LapsesAt(); return at.After(since) && !at.After(now) }
		// (A lapse that was due says nothing if the task ended meanwhile:
		// a board of only ended tasks would read as finished.)
		if due && !b.Finished() || len(b.Ready) > 0 || slices.ContainsFunc(b.InProgress, lapsed) {
			return b, nil
		}
		// Finished is said of every task (under the parent), whatever
		// its labels: others may still ready tasks of this agent's.
		whole := b
		if len(cfg.labels) > 0 {
			if whole, err = s.Board(ctx, Under(cfg.under)); err != nil {
				return Board{}, err
			}
		}
		if whole.Finished() {
			return whole, nil
		}
		if len(b.Limited) == 0 {
			limitWait = limitRecheck
		}
		if *events, due, err = wait(ctx, *events, b, cfg, now, limitWait); err != nil {
			return Board{}, err
		}
		if len(b.Limited) > 0 {
			limitWait = min(2*limitWait, maxLimitRecheck)
		}
	}
}

// workSettings applies opts to the defaults and checks the result (the
// store refuses a parent of WorkUnder that does not exist).
func workSettings(opts []WorkOption) (workConfig, error) {
	cfg := workConfig{lease: time.Minute, poll: time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lease <= 0 || cfg.poll <= 0 {
		return cfg, fmt.Errorf("taskgraph: Work needs a positive lease and poll interval, got %v and %v: %w", cfg.lease, cfg.poll, ErrInvalid)
	}
	if cfg.under < 0 {
		return cfg, fmt.Errorf("taskgraph: WorkUnder(%d): a task id is positive (0: any task): %w", cfg.under, ErrInvalid)
	}
	cfg.labels = slices.Sorted(slices.Values(cfg.labels)) // as Task.Labels are
	return cfg, nil
}

// workOn runs fn on the claimed task t and completes or releases it.
func workOn(ctx context.Context, s Store, owner string, t Task, fn WorkFunc, cfg workConfig) error {
	tctx, stop := KeepAlive(ctx, s, t.ID, owner, cfg.lease)
	err := fn(tctx, t)
	var verified []CompleteOption
	if err == nil {
		verified, err = runCheck(tctx, cfg.checks, t) // under the lease
	}
	lost := stop() // renewal ends before Complete: no renew can follow it
	if ctx.Err() != nil {
		// Work stops. Finished work is completed, so it is not done
		// twice; unfinished work is released, not left claimed.
		if err == nil && lost == nil {
			_, _ = s.Complete(context.WithoutCancel(ctx), t.ID, owner, verified...)
		} else if lost == nil {
			_, _ = s.Release(context.WithoutCancel(ctx), t.ID, owner)
		}
		return ctx.Err()
	}
	if lost != nil {
		return nil // another agent holds the task now; its outcome is theirs
	}
	if err != nil {
		return failOrRelease(ctx, s, owner, t, err)
	}
	if _, err := s.Complete(ctx, t.ID, owner, verified...); err != nil {
		var claimed *ClaimedError
		if errors.As(err, &claimed) {
			return nil // the lease lapsed just now and someone took it over
		}
		if errors.Is(err, ErrUnverified) { // a check and no WorkChecks: give it back
			if _, rerr := s.Release(ctx, t.ID, owner); rerr != nil && !errors.As(rerr, &claimed) {
				return rerr
			}
			return fmt.Errorf("taskgraph: Work: task %d names check %q, and Work was given no checks to run it (WorkChecks): %w", t.ID, t.extra().Check, err)
		}
		return err
	}
	return nil
}

// WorkChecks makes Work run the check a task names (Extra.Check), from
// checks, once its WorkFunc returned nil and before it completes the
// task: a check that passes completes it with its evidence
// (WithEvidence), one that fails or times out fails it with the
// evidence as the reason — a failed attempt, to which retries and backoff
// apply — and a check that cannot run (not defined) fails it so. Without
// WorkChecks, Work gives back a task with a check (Release) and returns
// the *UnverifiedError: it has nothing to verify it with.
func WorkChecks(checks *Checks) WorkOption {
	return func(c *workConfig) { c.checks = checks }
}

// runCheck runs t's check from checks, if t names one and checks is
// given, and returns the option that reports its passing run to
// Complete, or an error that fails the attempt.
func runCheck(ctx context.Context, checks *Checks, t Task) ([]CompleteOption, error) {
	name := t.extra().Check
	if name == "" || checks == nil {
		return nil, nil
	}
	ev, err := checks.Run(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	if !ev.Passed() {
		return nil, errors.New(ev.String())
	}
	return []CompleteOption{WithEvidence(ev)}, nil
}

// failOrRelease records that fn failed on t: the task fails with the
// error's text, or, if the store refuses that reason, is released.
func failOrRelease(ctx context.Context, s Store, owner string, t Task, ferr error) error {
	reason := ferr.Error()
	if reason == "" {
		reason = "the work function failed"
	}
	_, err := s.Fail(ctx, t.ID, owner, reason)
	var claimed *ClaimedError
	switch {
	case err == nil, errors.As(err, &claimed):
		return nil // failed, or the lease lapsed and someone else holds it
	case errors.Is(err, ErrInvalid):
		if _, err := s.Release(ctx, t.ID, owner); err != nil && !errors.As(err, &claimed) {
			return err
		}
		return nil
	}
	return err
}

// drain discards the events already delivered: the claim that follows sees
// everything they report.
func drain(events <-chan Event) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// lapseRecheck is how soon a wait looks again at a lease that has lapsed
// by this machine's clock but that ClaimNext did not take: the store
// decides a lapse by its own clock (WithClock, or the database's for
// pgstore), which may be behind. Looking once a second neither spins nor
// misses the lapse for long.
const lapseRecheck = time.Second

// limitRecheck is how soon a wait looks again while a task it could take
// is held back by a concurrency limit (Board.Limited): a limit raised by
// SetLimit changes no task, so no event tells of it. The wait doubles
// while the limit holds, to maxLimitRecheck, so that agents waiting out a
// long task read a Board now and then, not every second.
const (
	limitRecheck    = time.Second
	maxLimitRecheck = 16 * time.Second
)

// wait returns after the next event, when the first lease on the board
// b (of this agent's tasks: see awaitWork) lapses (lapsed true), when a
// task a limit holds back is due to be looked at again (after limitWait),
// or after poll on a store that cannot be watched. It returns nil events
// if the watch ended, so that Work polls from then on.
func wait(ctx context.Context, events <-chan Event, b Board, cfg workConfig, now time.Time, limitWait time.Duration) (_ <-chan Event, lapsed bool, err error) {
	d := cfg.poll
	if events != nil {
		d = time.Hour
	}
	toLapse := time.Duration(-1)
	for _, t := range b.InProgress {
		at := t.LapsesAt()
		if at.IsZero() {
			continue
		}
		left := at.Sub(now)
		if left <= 0 {
			left = lapseRecheck // lapsed already, and ClaimNext did not take it
		}
		if toLapse < 0 || left < toLapse {
			toLapse = left
		}
	}
	if toLapse >= 0 && toLapse < d {
		d, lapsed = toLapse, true
	}
	if len(b.Deferred) > 0 { // by NotBefore: the first is the one
		left := b.Deferred[0].NotBefore.Sub(now)
		if left <= 0 {
			left = lapseRecheck // due by this clock, not yet by the store's: look again soon, not at once
		}
		if left < d {
			d, lapsed = left, false // it is ready then: the board says so
		}
	}
	if len(b.Limited) > 0 && limitWait < d {
		d, lapsed = limitWait, false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return events, false, ctx.Err()
	case _, ok := <-events:
		if !ok {
			return nil, false, nil
		}
		return events, false, nil
	case <-timer.C:
		return events, lapsed, nil
	}
}

// KeepAlive renews owner's lease on task id to ttl every ttl/3 until stop is
// called, for harnesses that run their own loop; and once more when the
// claim's MaxRuntime or no-progress window would end it before the next
// renewal (Task.Lapse), so that its end is known at once. The returned ctx is
// cancelled, with the renewal error as its cause, if the lease cannot be
// renewed (the claim was lost); work on the task should then stop. stop
// ends the renewals, waits for the last one, and returns the error that
// lost the claim, or nil. Call stop before Complete or Release.
func KeepAlive(ctx context.Context, s Store, id ID, owner string, ttl time.Duration) (context.Context, func() error) {
	tctx, cancel := context.WithCancelCause(ctx)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var lost error
	wg.Add(1)
	go func() {
		defer wg.Done()
		every := max(ttl/3, time.Millisecond)
		// A claim that its max runtime or no-progress window ends before
		// the next renewal is renewed then, so that its holder learns at
		// once that it lost it (the renewal is refused: ErrLapsed).
		next := func(t Task) time.Duration {
			if at, c := t.Lapse(); c != ClockLease && t.Status == InProgress {
				return min(every, max(time.Until(at), time.Millisecond))
			}
			return every
		}
		wait := every
		if t, err := s.Get(tctx, id); err == nil {
			wait = next(t)
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tctx.Done():
				return
			case <-timer.C:
			}
			t, err := s.Renew(tctx, id, owner, ttl)
			if err == nil {
				timer.Reset(next(t))
				continue
			}
			if tctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrClaimed) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) || errors.Is(err, ErrLapsed) {
				lost = err
				cancel(fmt.Errorf("taskgraph: the claim on task %d was lost: %w", id, err))
				return
			}
			// A passing failure (a busy disk, a dropped connection):
			// the lease still runs; try again on the next tick.
			timer.Reset(every)
		}
	}()
	var once sync.Once
	return tctx, func() error {
		once.Do(func() {
			close(quit)
			wg.Wait()
			cancel(nil)
		})
		return lost
	}
}
