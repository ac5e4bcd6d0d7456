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

// EventuateDDL is Eventuate Tram's received_messages table in MySQL and MariaDB, as its Flyway
// migration (eventuate-common-flyway, mysql/V2__tram_database.sql) creates it, with utf8mb4 so a
// message id holds any text: a row per message a consumer (a subscriber id) has processed,
// creation_time in epoch milliseconds. The tests and the demo create it; Redrive never does in a
// service's database.
const EventuateDDL = `
CREATE TABLE IF NOT EXISTS received_messages (
    consumer_id   VARCHAR(255),
    message_id    VARCHAR(255),
    creation_time BIGINT,
    published     SMALLINT DEFAULT 0,
    PRIMARY KEY (consumer_id, message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
`
