-- Error groups seen in dead-letter topics (issue 18: "a new error group"). The sampler's leader
-- folds the records that arrived since its last round into one row per (source, group); a group
-- is new when it had not been seen for notify.new_group_window before: episode_start is then set
-- to its first record of this sighting. ops/health turns a recent episode_start into a
-- new_error_group problem whose key carries the episode, so a group that comes back after a quiet
-- window notifies again and one that keeps arriving does not.
CREATE TABLE error_group (
    source           text        NOT NULL, -- kafka/<cluster>/<topic>
    group_key        text        NOT NULL, -- exception type | cause, as the /errors page groups
    exception_type   text        NOT NULL,
    exception_cause  text        NOT NULL DEFAULT '',
    first_seen       timestamptz NOT NULL, -- the oldest record ever folded in
    last_seen        timestamptz NOT NULL, -- the newest
    episode_start    timestamptz NOT NULL, -- the first record after a quiet window (or ever)
    count            bigint      NOT NULL, -- records folded in this episode
    sample_message   text        NOT NULL DEFAULT '',
    sample_partition integer     NOT NULL DEFAULT 0,
    sample_offset    bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (source, group_key)
);
CREATE INDEX error_group_episode ON error_group (episode_start);
