-- Version 16: the pending tasks of a graph in claim order, split by their
-- labels and by their parent, so that ClaimNext finds the first it may
-- take without passing over the others (pick.go): under a reached limit,
-- the streams of the label sets that carry none of its labels; under a
-- task (WithUnder), the streams of the parents under it. A skip over the
-- leading columns finds the label sets and the parents, one probe each.
-- At 100,000 tasks, a reached limit holding back the most urgent tenth of
-- them made ClaimNext pass over those 6,700 tasks at each claim, and
-- WithUnder the last of 10 epics took seconds.
CREATE INDEX taskgraph_tasks_claim_labels ON taskgraph_tasks (graph, labels, priority, created_at, id) WHERE status = 'pending';
CREATE INDEX taskgraph_tasks_claim_parent ON taskgraph_tasks (graph, parent, priority, created_at, id) WHERE status = 'pending' AND parent <> 0;
