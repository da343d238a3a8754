-- Version 5: a write that changes nothing in a row notifies no watcher.
-- Reopen writes the rows of a reopened task's dependents unchanged, so
-- that a concurrent ClaimNext sees them changed and re-checks (see
-- unchangedSQL in claim.go); that is not a change to report.
DROP TRIGGER taskgraph_notify ON taskgraph_tasks;

CREATE TRIGGER taskgraph_notify AFTER INSERT OR DELETE ON taskgraph_tasks
    FOR EACH ROW EXECUTE FUNCTION taskgraph_notify();

CREATE TRIGGER taskgraph_notify_update AFTER UPDATE ON taskgraph_tasks
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION taskgraph_notify();
