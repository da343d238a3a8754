-- Version 14: a task's liveness limits (taskgraph.Extra.MaxRuntime,
-- ProgressWindow), in microseconds, 0 for none, at most
-- taskgraph.MaxLiveness (a week). A claim lapses at the earliest of its
-- lease, claimed_at plus max_runtime_us, and its last progress (the
-- later of claimed_at and its newest note) plus progress_window_us
-- (lapsesSQL).
ALTER TABLE taskgraph_tasks
	ADD COLUMN max_runtime_us bigint NOT NULL DEFAULT 0,
	ADD COLUMN progress_window_us bigint NOT NULL DEFAULT 0,
	ADD CONSTRAINT taskgraph_tasks_liveness CHECK (max_runtime_us BETWEEN 0 AND 604800000000
		AND progress_window_us BETWEEN 0 AND 604800000000);
