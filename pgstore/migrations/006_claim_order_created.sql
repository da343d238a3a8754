-- Version 6: the claim order breaks ties between equally urgent tasks by
-- creation time, then id (taskgraph.Rules.ClaimOrder): ids drawn for a
-- graph kept in git do not follow creation order. The claim index walks
-- the new order, so ClaimNext still reads it off the index.
DROP INDEX taskgraph_tasks_claim;
CREATE INDEX taskgraph_tasks_claim ON taskgraph_tasks (graph, priority, created_at, id) WHERE status = 'pending';
