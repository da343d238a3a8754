-- Version 17: approval gates and links (taskgraph.Extra.NeedsApproval,
-- CreatedVia, Links). A pending task with needs_approval set is claimed by
-- no one until approved (undeferred); created_via says how it was created
-- (at most 16 bytes); links is a JSON array of {ref, at}, at most
-- taskgraph.MaxLinks (20) of at most MaxLinkRef (500) bytes, NULL when
-- none. taskgraph_approval holds each graph's ApprovalPolicy: the labels
-- and the ways of creation whose new tasks need approval.
ALTER TABLE taskgraph_tasks
	ADD COLUMN needs_approval boolean NOT NULL DEFAULT false,
	ADD COLUMN created_via text NOT NULL DEFAULT '',
	ADD COLUMN links jsonb,
	ADD CONSTRAINT taskgraph_tasks_created_via CHECK (octet_length(created_via) <= 16),
	ADD CONSTRAINT taskgraph_tasks_links CHECK (CASE WHEN jsonb_typeof(links) = 'array' THEN jsonb_array_length(links) <= 20 ELSE true END);

CREATE TABLE taskgraph_approval (
	graph text PRIMARY KEY,
	labels text[] NOT NULL,
	via text[] NOT NULL
);
