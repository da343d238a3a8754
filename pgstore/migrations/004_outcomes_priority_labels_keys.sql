-- Version 4: two more outcomes, failed and cancelled, with a reason; a
-- result recorded on completion; a priority (0 = P0, most urgent, to 4;
-- 2 by default), labels and a key on every task.
ALTER TABLE taskgraph_tasks DROP CONSTRAINT taskgraph_tasks_status_check;
ALTER TABLE taskgraph_tasks ADD CONSTRAINT taskgraph_tasks_status_check
    CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'cancelled'));

ALTER TABLE taskgraph_tasks
    ADD COLUMN priority smallint NOT NULL DEFAULT 2 CHECK (priority BETWEEN 0 AND 4),
    ADD COLUMN labels   text[]   NOT NULL DEFAULT '{}',
    ADD COLUMN key      text     NOT NULL DEFAULT '',
    ADD COLUMN reason   text     NOT NULL DEFAULT '',
    ADD COLUMN result   text     NOT NULL DEFAULT '';

-- ClaimNext: the most urgent pending task of a graph, the lowest id among
-- equals, walked in this order (labels are checked on the way).
DROP INDEX taskgraph_tasks_pending;
CREATE INDEX taskgraph_tasks_claim ON taskgraph_tasks (graph, priority, id) WHERE status = 'pending';

-- A key names one task of a graph.
CREATE UNIQUE INDEX taskgraph_tasks_key ON taskgraph_tasks (graph, key) WHERE key <> '';
