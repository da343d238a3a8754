-- Version 7: no trigger notifies. In PostgreSQL a transaction that
-- notifies takes a database-wide lock at commit (PreCommit_Notify) and
-- holds it while its commit record is flushed, so every write that
-- notified from inside its transaction waited for every other one's
-- flush: 8 workers barely beat 1. pgstore now notifies after its write
-- has committed, in a transaction of its own that writes nothing (and so
-- flushes nothing); a program that writes the table directly notifies
-- with SELECT pg_notify('taskgraph', graph).
DROP TRIGGER taskgraph_notify ON taskgraph_tasks;
DROP TRIGGER taskgraph_notify_update ON taskgraph_tasks;
DROP FUNCTION taskgraph_notify();
