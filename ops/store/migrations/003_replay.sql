-- Guarded replay: a plan freezes the exact message set and each message's verdict; a job runs a
-- plan; the ledger has one row per message per job, and its partial unique index is what makes
-- concurrent replays of one message publish it once.
CREATE TABLE replay_plan (
    id          text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    source      jsonb NOT NULL,
    filter      jsonb NOT NULL DEFAULT '{}',
    total       int NOT NULL,
    actions     jsonb NOT NULL,
    warnings    jsonb NOT NULL DEFAULT '[]'
);

CREATE TABLE replay_plan_item (
    plan_id      text NOT NULL REFERENCES replay_plan (id) ON DELETE CASCADE,
    seq          int NOT NULL,
    locator      text NOT NULL,          -- where the dead message is: kafka:main/orders.DLT/0/42
    message_id   text NOT NULL DEFAULT '',
    consumer     text NOT NULL DEFAULT '',
    destination  jsonb NOT NULL,         -- where it goes back to
    inbox        text NOT NULL,          -- processed | in_progress | not_processed | unknown
    action       text NOT NULL,          -- publish | skip_…
    error_group  text NOT NULL DEFAULT '',
    replay_count int NOT NULL DEFAULT 0,
    position     bigint,                 -- Kafka offset or outbox row id, to read it again
    partition    int,
    PRIMARY KEY (plan_id, seq)
);

CREATE TABLE replay_job (
    id               text PRIMARY KEY,
    plan_id          text NOT NULL REFERENCES replay_plan (id),
    status           text NOT NULL,     -- pending | running | done | cancelled | failed
    actor            text NOT NULL,
    reason           text NOT NULL DEFAULT '',
    force            boolean NOT NULL DEFAULT false,
    rate_per_second  int NOT NULL,
    total            int NOT NULL,
    next_seq         int NOT NULL DEFAULT 0,   -- items below it are settled
    cancel_requested boolean NOT NULL DEFAULT false,
    lease_owner      text,
    lease_until      timestamptz,
    error            text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX replay_job_claimable ON replay_job (created_at) WHERE status IN ('pending', 'running');

CREATE TABLE replay_ledger (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      text NOT NULL REFERENCES replay_job (id),
    seq         int NOT NULL,
    locator     text NOT NULL,
    message_id  text NOT NULL DEFAULT '',
    outcome     text NOT NULL,           -- active | published | skipped | failed
    detail      text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT now()
);
-- At most one replay of a message is in flight or done: a second claim fails on this index.
CREATE UNIQUE INDEX replay_ledger_once ON replay_ledger (locator) WHERE outcome IN ('active', 'published');
CREATE UNIQUE INDEX replay_ledger_job_seq ON replay_ledger (job_id, seq);
CREATE INDEX replay_ledger_job_outcome ON replay_ledger (job_id, outcome);
