-- Version 15: a default liveness per label (taskgraph.LivenessDefaulter),
-- beside the label's concurrency limit: the max runtime and progress
-- window, in microseconds (0: none), that a task created with the label
-- and without its own gets.
CREATE TABLE taskgraph_liveness (
	graph text NOT NULL,
	label text NOT NULL,
	max_runtime_us bigint NOT NULL CHECK (max_runtime_us BETWEEN 0 AND 604800000000),
	progress_window_us bigint NOT NULL CHECK (progress_window_us BETWEEN 0 AND 604800000000),
	PRIMARY KEY (graph, label)
);
