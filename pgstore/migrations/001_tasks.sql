-- taskgraph schema, version 1: graphs, tasks, and change notifications.
CREATE TABLE taskgraph_graphs (
    name       text PRIMARY KEY,
    high_water bigint NOT NULL DEFAULT 0 -- the highest id ever allocated; ids are never reused
);

CREATE TABLE taskgraph_tasks (
    graph            text    NOT NULL REFERENCES taskgraph_graphs (name) ON DELETE CASCADE,
    id               bigint  NOT NULL CHECK (id > 0),
    subject          text    NOT NULL CHECK (subject <> ''),
    description      text    NOT NULL DEFAULT '',
    status           text    NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed')),
    owner            text    NOT NULL DEFAULT '',
    blocked_by       bigint[] NOT NULL DEFAULT '{}',
    metadata         jsonb,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    rev              bigint  NOT NULL,
    claimed_at       timestamptz,
    lease_expires_at timestamptz,
    prev_owner       text    NOT NULL DEFAULT '',
    PRIMARY KEY (graph, id)
);

-- Dependents of a task: WHERE blocked_by @> ARRAY[id].
CREATE INDEX taskgraph_tasks_blocked_by ON taskgraph_tasks USING gin (blocked_by);
-- ClaimNext: the lowest pending id of a graph.
CREATE INDEX taskgraph_tasks_pending ON taskgraph_tasks (graph, id) WHERE status = 'pending';
CREATE INDEX taskgraph_tasks_leased ON taskgraph_tasks (graph, lease_expires_at) WHERE status = 'in_progress' AND lease_expires_at IS NOT NULL;

CREATE FUNCTION taskgraph_notify() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('taskgraph', OLD.graph || E'\t' || OLD.id || E'\tdelete');
        RETURN OLD;
    END IF;
    PERFORM pg_notify('taskgraph', NEW.graph || E'\t' || NEW.id || E'\t' || lower(TG_OP));
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER taskgraph_notify AFTER INSERT OR UPDATE OR DELETE ON taskgraph_tasks
    FOR EACH ROW EXECUTE FUNCTION taskgraph_notify();
