// Package pgstore is a taskgraph.Store on PostgreSQL, for agents spread
// over several machines: the graph lives in a database every machine
// reaches, and the database, not a file lock, serialises the writes.
//
// Every decision — what an operation may do to a task, and the error when
// it may not — is taken by taskgraph.Rules, as in the file and memory
// stores. What pgstore keeps for itself is what only SQL can do: locking
// the rows a write touches, the SKIP LOCKED claim, the cycle search over
// the table, the count of backward edges, persistence, and LISTEN/NOTIFY.
// The two writes every worker makes, ClaimNext and Complete by the task's
// holder, are each one round trip: the Rulebook's decision written in SQL
// for the cases it can take alone, checked against MemStore by the tests;
// every other case writes nothing there and goes to the Rulebook.
//
// A pool in any of pgx's query modes will do, the simple protocol (for a
// connection pooler) included.
//
// Several named graphs share one database; the graph name plays the role
// of the task directory. The schema is created by versioned migrations
// embedded in the package, applied by Open (or Migrate) under an advisory
// lock, so many processes may start at once.
//
// Concurrency: every operation is one transaction. Claims and completions
// lock only the rows they touch, and ClaimNext picks the most urgent ready
// task (then the first created, then the lowest id) with FOR UPDATE SKIP
// LOCKED, so workers run in parallel without ever claiming one task twice. Writes that add edges or
// delete tasks serialise per graph with a transaction-scoped advisory lock,
// so two concurrent edits can never close a cycle between them. Leases
// expire by the database's clock, or by the clock given with WithClock.
//
// Watchers (Watch, and Work waiting for a task) are woken by NOTIFY on the
// channel taskgraph, with the graph's name as payload, which every write
// sends once it has committed, from a transaction of its own: a
// transaction that notifies holds a database-wide lock through its
// commit, so a notification sent inside each write would serialise the
// writes' commits. A program that writes the tables directly should send
// SELECT pg_notify('taskgraph', graph) after its commit; until someone
// does, watchers see its change at their next wake-up.
package pgstore
