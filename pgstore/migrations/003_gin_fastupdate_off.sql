-- Version 3: look dependents up in the GIN index directly. With the default
-- fastupdate, rows inserted in bulk wait in the index's pending list, which
-- every lookup scans in full until a vacuum merges it: a Get at 100,000
-- tasks took milliseconds.
ALTER INDEX taskgraph_tasks_blocked_by SET (fastupdate = off);
SELECT gin_clean_pending_list('taskgraph_tasks_blocked_by');
