-- Version 13: the tasks in progress of a graph, indexed: a claim of a task
-- carrying a limited label counts the label's holders among them
-- (checkLimits), and ClaimNext passes over the ready tasks whose labels'
-- limits they reach (reachedSQL); without the index each count read the
-- whole graph (230 ms at 100,000 tasks).
CREATE INDEX taskgraph_tasks_running ON taskgraph_tasks (graph) WHERE status = 'in_progress';
