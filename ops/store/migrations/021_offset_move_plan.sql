-- Offset moves of a consumer group (issue 17), planned then applied like a replay. A plan is kept
-- so that apply moves exactly what the operator saw, and so that an apply interrupted between the
-- copies of the skipped records and the commit can be applied again: body holds the partitions
-- (current, new, skipped), the copy destination and that topic's end offsets at planning time,
-- from which copies already made are found.
CREATE TABLE offset_move_plan (
    id          text        PRIMARY KEY,
    cluster     text        NOT NULL,
    group_name  text        NOT NULL,
    topic       text        NOT NULL,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    body        jsonb       NOT NULL,
    applied_at  timestamptz,
    applied_by  text,
    approved_by text
);
CREATE INDEX offset_move_plan_group ON offset_move_plan (cluster, group_name, created_at DESC);
