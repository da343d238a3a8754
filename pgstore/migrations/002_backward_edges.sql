-- Version 2: count the edges whose blocker has the higher id. While a
-- graph has none, ids are a topological order and an edge from a lower to
-- a higher id cannot close a cycle, so edge edits skip the cycle search.
ALTER TABLE taskgraph_graphs ADD COLUMN backward_edges bigint NOT NULL DEFAULT 0;

UPDATE taskgraph_graphs g SET backward_edges = (
    SELECT count(*) FROM taskgraph_tasks t, unnest(t.blocked_by) AS b(id)
    WHERE t.graph = g.name AND b.id > t.id);
