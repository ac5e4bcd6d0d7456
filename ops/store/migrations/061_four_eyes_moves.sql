-- The two-person rule counts people and volume (ops/foureyes): what one person moved from one
-- source within replay.four_eyes.window, across jobs, direct outbox requeues and offset moves,
-- not one job at a time (five one-record plans once ran where one five-record plan waited). A row
-- is one action's volume; rows older than the longest window (30 days) are deleted as new ones
-- come. A job keeps the person who started it (a token's owner), whom no token of theirs may
-- approve for.
CREATE TABLE four_eyes_move (
    id     bigserial   PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    person text        NOT NULL,
    source text        NOT NULL,
    action text        NOT NULL,
    ref    text        NOT NULL,
    n      bigint      NOT NULL
);
CREATE INDEX four_eyes_move_person_source ON four_eyes_move (person, source, at);
ALTER TABLE replay_job ADD COLUMN person text NOT NULL DEFAULT '';
