-- Sampling leadership per source, as leases with a heartbeat and a fencing token, replacing the
-- single session advisory lock: a leader that hangs without dying (SIGSTOP) kept that lock for as
-- long as its connection lived, and every replica served its frozen snapshot.

-- sampler_lease has one row per sampled source ('kafka/<cluster>', 'rabbitmq/<broker>'). The owner
-- renews expires_at every few seconds; anyone may take a lease that is released (owner '') or past
-- expires_at, and each takeover increments token. A sample is stored only while its token is the
-- current one (ops/store WriteSample), so a resumed old leader's writes are refused.
CREATE TABLE sampler_lease (
    source      text PRIMARY KEY,
    owner       text        NOT NULL DEFAULT '',          -- '' when released
    token       bigint      NOT NULL DEFAULT 0,           -- incremented at each takeover
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    renewed_at  timestamptz NOT NULL DEFAULT now()
);

-- sampler_replica: the replicas taking part, each with its heartbeat, so they can split the
-- sources evenly (a replica whose heartbeat expired no longer counts) and /api/v1/replicas can
-- list them.
CREATE TABLE sampler_replica (
    id            text PRIMARY KEY,
    started_at    timestamptz NOT NULL DEFAULT now(),
    heartbeat_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
