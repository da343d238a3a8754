-- Version 11: a task's parent (taskgraph.Task.Parent), 0 for none. The
-- edge that makes a parent wait on its children is in the parent's
-- blocked_by, as every edge is; the index serves the tree's reads
-- (children, "under").
ALTER TABLE taskgraph_tasks ADD COLUMN parent bigint NOT NULL DEFAULT 0;
CREATE INDEX taskgraph_tasks_parent ON taskgraph_tasks (graph, parent) WHERE parent <> 0;
