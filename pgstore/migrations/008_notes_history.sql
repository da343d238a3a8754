-- Version 8: notes and history (taskgraph.Task.Notes, Task.History), as
-- JSON arrays, NULL when empty: like every task field, written by the
-- Rulebook, never decided here.
ALTER TABLE taskgraph_tasks ADD COLUMN notes jsonb, ADD COLUMN history jsonb;
