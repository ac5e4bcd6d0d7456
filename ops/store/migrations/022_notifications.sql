-- Notifications (issue 18). notify_alert is the notifier's memory of what is firing, so that a new
-- leader notifies on changes only: one row per problem key (ops/health), its current episode
-- (incremented each time it fires again after resolving) and whether it fires now.
CREATE TABLE notify_alert (
    key         text PRIMARY KEY,
    kind        text        NOT NULL,
    severity    text        NOT NULL,
    title       text        NOT NULL,
    summary     text        NOT NULL DEFAULT '',
    link        text        NOT NULL DEFAULT '',
    labels      jsonb       NOT NULL DEFAULT '{}',
    since       timestamptz NOT NULL,
    episode     integer     NOT NULL,
    firing      boolean     NOT NULL,
    fired_at    timestamptz NOT NULL,
    resolved_at timestamptz
);

-- notification is the delivery log: one row per event and channel, written before it is sent and
-- marked delivered after. The unique key makes recording idempotent: the first firing of an
-- episode is seq 0, each reminder (repeat_every) the next seq; a resolution is state 'resolved'.
-- A row is claimed for a send by moving next_attempt_at past the backoff, so a replica that dies
-- mid-send leaves it to the next leader once the backoff has passed, and a delivered row is
-- never sent again.
CREATE TABLE notification (
    id              bigserial PRIMARY KEY,
    alert_key       text        NOT NULL,
    episode         integer     NOT NULL,
    state           text        NOT NULL,  -- firing | resolved | test
    seq             integer     NOT NULL,
    channel         text        NOT NULL,
    event           jsonb       NOT NULL,  -- the generic webhook body
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    failed_at       timestamptz,           -- gave up after the last attempt
    last_error      text        NOT NULL DEFAULT '',
    UNIQUE (alert_key, episode, state, seq, channel)
);
CREATE INDEX notification_due ON notification (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX notification_recent ON notification (created_at DESC);

-- notify_silence holds notifications of matching problems until ends_at.
CREATE TABLE notify_silence (
    id         bigserial PRIMARY KEY,
    matchers   jsonb       NOT NULL,  -- {"kind": "...", "cluster": "...", ...}; all must match
    ends_at    timestamptz NOT NULL,
    comment    text        NOT NULL DEFAULT '',
    created_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
