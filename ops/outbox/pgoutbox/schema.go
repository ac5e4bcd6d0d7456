package pgoutbox

// SeedDDL is the reference outbox table of the seed document (section 六.3), with its index.
// Redrive never creates it in a service's database; the demo and the tests do.
const SeedDDL = `
CREATE TABLE IF NOT EXISTS outbox_event (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        VARCHAR(128) NOT NULL UNIQUE,
    aggregate_type  VARCHAR(128) NOT NULL,
    aggregate_id    VARCHAR(128) NOT NULL,
    event_type      VARCHAR(128) NOT NULL,
    schema_version  INT NOT NULL,
    payload         TEXT NOT NULL,
    status          VARCHAR(20) NOT NULL,
    attempts        INT NOT NULL DEFAULT 0,
    available_at    TIMESTAMP NOT NULL,
    locked_until    TIMESTAMP NULL,
    last_error      TEXT NULL,
    created_at      TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP NULL
);
CREATE INDEX IF NOT EXISTS idx_outbox_ready ON outbox_event(status, available_at);
`
