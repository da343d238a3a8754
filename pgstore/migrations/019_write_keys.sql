-- Version 19: write keys (taskgraph.KeyRecorder). A write made with a key
-- (taskgraph.WithWriteKey: the hub's digest of its client's idempotency
-- key) inserts a row here in its own transaction, before its COMMIT: the
-- tasks of its answer, in order, and whether it was refused after
-- writing. A retry whose answer was lost finds it (RecallWrite) for
-- taskgraph.WriteKeyWindow; a second write with the same key fails on the
-- primary key and is rolled back, so that none is applied twice. Each
-- write deletes a few rows past the window (writeKeySQL).
CREATE TABLE taskgraph_write_keys (
	graph text NOT NULL,
	key text NOT NULL CHECK (octet_length(key) <= 64),
	at timestamptz NOT NULL,
	tasks bigint[] NOT NULL,
	revs bigint[] NOT NULL,
	refused boolean NOT NULL,
	PRIMARY KEY (graph, key)
);
CREATE INDEX taskgraph_write_keys_at ON taskgraph_write_keys (graph, at);
