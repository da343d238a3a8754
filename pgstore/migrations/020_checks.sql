-- Version 18: a task's check (taskgraph.Extra.Check: the name of a check
-- in the graph's checks file, '' for none; never a command) and its
-- acceptance items in words (Extra.Acceptance), bounded as the Rulebook
-- bounds them (MaxLabel, MaxAcceptance). The fast path of Complete
-- (completeSQL) takes only tasks without a check: the Rulebook decides
-- the others (Rules.Complete: evidence or SkipCheck).
ALTER TABLE taskgraph_tasks
	ADD COLUMN check_name text NOT NULL DEFAULT '',
	ADD COLUMN acceptance text[] NOT NULL DEFAULT '{}',
	ADD CONSTRAINT taskgraph_tasks_check CHECK (octet_length(check_name) <= 64
		AND cardinality(acceptance) <= 20);
