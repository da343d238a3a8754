-- Version 12: the bounds every store holds a task to
-- (taskgraph.Rules.Bounded), so that no row holds what no write stores,
-- also one written by hand: a name longer than taskgraph.MaxOwner or
-- MaxAuthor (256 bytes), a key longer than MaxKey (128), attempts or
-- MaxAttempts past MaxAttemptsLimit (1000), a backoff past MaxBackoff (a
-- day), an id past MaxID (2^53-1), more than MaxNotes notes (20, each at
-- most MaxNoteText bytes) or MaxHistory history entries (50). A database
-- already holding such a row fails this migration, naming the
-- constraint: fix the row, then open the store again.
--
-- The lists are bounded when they are arrays: what else a column written
-- by hand holds is for the reads to refuse, as before.
CREATE FUNCTION taskgraph_notes_bounded(notes jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN jsonb_typeof(notes) = 'array' THEN jsonb_array_length(notes) <= 20 AND NOT EXISTS (
		SELECT 1 FROM jsonb_array_elements(notes) AS n(note)
		WHERE octet_length(n.note->>'author') > 256 OR octet_length(n.note->>'text') > 2000) ELSE true END
$$;

CREATE FUNCTION taskgraph_history_bounded(history jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN jsonb_typeof(history) = 'array' THEN jsonb_array_length(history) <= 50 AND NOT EXISTS (
		SELECT 1 FROM jsonb_array_elements(history) AS h(entry)
		WHERE octet_length(h.entry->>'by') > 256
			OR jsonb_typeof(h.entry->'count') = 'number' AND (h.entry->'count')::numeric < 0) ELSE true END
$$;

ALTER TABLE taskgraph_tasks
	ADD CONSTRAINT taskgraph_tasks_names CHECK (octet_length(owner) <= 256 AND octet_length(prev_owner) <= 256),
	ADD CONSTRAINT taskgraph_tasks_key_length CHECK (octet_length(key) <= 128),
	ADD CONSTRAINT taskgraph_tasks_schedule CHECK (max_attempts BETWEEN 0 AND 1000 AND attempts BETWEEN 0 AND 1000
		AND backoff_us BETWEEN 0 AND 86400000000),
	ADD CONSTRAINT taskgraph_tasks_ids CHECK (id <= 9007199254740991 AND parent BETWEEN 0 AND 9007199254740991
		AND 1 <= ALL (blocked_by) AND 9007199254740991 >= ALL (blocked_by)),
	ADD CONSTRAINT taskgraph_tasks_notes CHECK (taskgraph_notes_bounded(notes)),
	ADD CONSTRAINT taskgraph_tasks_history CHECK (taskgraph_history_bounded(history));
