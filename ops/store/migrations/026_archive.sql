-- The archive of messages discarded from RabbitMQ dead-letter queues (issue 16). A discard job
-- writes each message here whole — properties, headers with their AMQP types, body — before it
-- acks it from the queue; (job_id, locator) makes a resumed job's second write of the same
-- message a no-op. A restored message keeps its row, with who restored it, when and where to.
CREATE TABLE archived_message (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id       text        NOT NULL,
    locator      text        NOT NULL,
    message_id   text        NOT NULL DEFAULT '',
    broker       text        NOT NULL,
    vhost        text        NOT NULL,
    queue        text        NOT NULL,
    archived_at  timestamptz NOT NULL DEFAULT now(),
    actor        text        NOT NULL,
    reason       text        NOT NULL DEFAULT '',
    exchange     text        NOT NULL DEFAULT '', -- as it was delivered from the queue
    routing_key  text        NOT NULL DEFAULT '',
    original_exchange    text NOT NULL DEFAULT '', -- where it was going before it died (x-death)
    original_routing_key text NOT NULL DEFAULT '',
    properties   jsonb       NOT NULL,
    headers      jsonb       NOT NULL,
    headers_wire bytea       NOT NULL,
    body         bytea       NOT NULL,
    restored_at  timestamptz,
    restored_by  text,
    restored_to  text,
    UNIQUE (job_id, locator)
);
CREATE INDEX archived_message_queue ON archived_message (broker, queue, archived_at, id);
