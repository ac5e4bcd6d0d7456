package mysqloutbox

// SeedDDL is the seed's reference outbox table (section 六.3) in MySQL and MariaDB: the same
// columns as PostgreSQL's, the identity an AUTO_INCREMENT, the TIMESTAMPs DATETIME(6) written in
// UTC, the (status, available_at) index. Redrive never creates it in a service's database; the
// demo and the tests do.
const SeedDDL = `
CREATE TABLE IF NOT EXISTS outbox_event (
    id              BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    event_id        VARCHAR(128) NOT NULL UNIQUE,
    aggregate_type  VARCHAR(128) NOT NULL,
    aggregate_id    VARCHAR(128) NOT NULL,
    event_type      VARCHAR(128) NOT NULL,
    schema_version  INT NOT NULL,
    payload         TEXT NOT NULL,
    status          VARCHAR(20) NOT NULL,
    attempts        INT NOT NULL DEFAULT 0,
    available_at    DATETIME(6) NOT NULL,
    locked_until    DATETIME(6) NULL,
    last_error      TEXT NULL,
    created_at      DATETIME(6) NOT NULL,
    sent_at         DATETIME(6) NULL,
    INDEX idx_outbox_ready (status, available_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
`
