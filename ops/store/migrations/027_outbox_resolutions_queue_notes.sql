-- Resolution state of outbox DEAD events (issue 16), kept here so that the service's outbox table
-- is never touched: one row per event (by its row id), none = open. The states are the Kafka dead
-- letters' (resolved, ignored by a person; replayed by a job, with its id). An event counts as
-- settled on the overview only while it is DEAD and resolved or ignored: one that a replay sent
-- back and that died again is open again.
CREATE TABLE outbox_resolution (
    outbox  text        NOT NULL,
    event   bigint      NOT NULL, -- the outbox row's id
    state   text        NOT NULL CHECK (state IN ('open', 'resolved', 'ignored', 'replayed')),
    actor   text        NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    reason  text        NOT NULL DEFAULT '',
    job_id  text        NOT NULL DEFAULT '',
    PRIMARY KEY (outbox, event)
);
-- The events the overview no longer counts as waiting for an operator.
CREATE INDEX outbox_resolution_settled ON outbox_resolution (outbox, event) WHERE state IN ('resolved', 'ignored');

-- Notes on RabbitMQ dead letters: a queue's message is named by its message id (a queue has no
-- offsets), an error group by its reason and exception like a topic's (exception_type holds the
-- group key). Exactly one of the three targets.
ALTER TABLE dead_letter_note ADD COLUMN message_id text;
ALTER TABLE dead_letter_note DROP CONSTRAINT dead_letter_note_check;
ALTER TABLE dead_letter_note ADD CONSTRAINT dead_letter_note_one_target
    CHECK (num_nonnulls(exception_type, partition, message_id) = 1);
