package mysqlinbox

// SeedDDL is the seed's inbox table (section 七.1) in MySQL and MariaDB: a row per message a
// consumer received, keyed by message and consumer, processed_at set (DATETIME(6), UTC) once its
// effect is committed. Redrive never creates it in a service's database; the demo and the tests
// do.
const SeedDDL = `
CREATE TABLE IF NOT EXISTS inbox_message (
    message_id   VARCHAR(128) NOT NULL,
    consumer     VARCHAR(128) NOT NULL,
    received_at  DATETIME(6) NOT NULL,
    processed_at DATETIME(6) NULL,
    PRIMARY KEY (message_id, consumer)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
`
