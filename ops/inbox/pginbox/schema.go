package pginbox

// SeedDDL is the seed's inbox table (section 七.1): a row per message a consumer received, keyed
// by message and consumer, processed_at set once its effect is committed. Redrive never creates it
// in a service's database; the demo and the tests do.
const SeedDDL = `
CREATE TABLE IF NOT EXISTS inbox_message (
    message_id   VARCHAR(128) NOT NULL,
    consumer     VARCHAR(128) NOT NULL,
    received_at  TIMESTAMP NOT NULL,
    processed_at TIMESTAMP NULL,
    PRIMARY KEY (message_id, consumer)
);`

// EventuateDDL is Eventuate Tram's received_messages table in PostgreSQL, as its Flyway migration
// (eventuate-common-flyway, V2__tram_database_postgres.sql) creates it: a row per message a
// consumer (a subscriber id) has processed, creation_time in epoch milliseconds. The tests and
// the demo create it; Redrive never does in a service's database.
const EventuateDDL = `
CREATE TABLE IF NOT EXISTS received_messages (
    consumer_id   VARCHAR(1000),
    message_id    VARCHAR(1000),
    creation_time BIGINT,
    published     SMALLINT DEFAULT 0,
    PRIMARY KEY (consumer_id, message_id)
);`
