-- Version 10: concurrency limits per label (taskgraph.Limiter): at most
-- max tasks of the graph carrying label in progress at once.
CREATE TABLE taskgraph_limits (
	graph text NOT NULL,
	label text NOT NULL,
	max int NOT NULL CHECK (max > 0),
	PRIMARY KEY (graph, label)
);
