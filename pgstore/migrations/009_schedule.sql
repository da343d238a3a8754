-- Version 9: a task's schedule (taskgraph.Task.NotBefore, Due,
-- MaxAttempts, Attempts, Backoff). not_before takes part in the ready
-- condition (readyCondition): a task is not claimed before it.
ALTER TABLE taskgraph_tasks
	ADD COLUMN not_before timestamptz,
	ADD COLUMN due timestamptz,
	ADD COLUMN max_attempts int NOT NULL DEFAULT 0,
	ADD COLUMN attempts int NOT NULL DEFAULT 0,
	ADD COLUMN backoff_us bigint NOT NULL DEFAULT 0;
