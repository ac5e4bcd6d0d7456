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
