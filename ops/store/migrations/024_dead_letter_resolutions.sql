-- Resolution state of Kafka dead letters (issue 16). A DLT's records are never deleted, so what a
-- person decided about one (resolved, ignored) or what a replay job did with it (replayed, with
-- the job's id) is kept here, one row per record; a record without a row is open. Reopening keeps
-- the row with state 'open' so the page can say who reopened it. The exception type and cause are
-- copied from the record's dead-letter headers when it is marked, so that an error group's open
-- count is one indexed count, not a re-read of the topic.
CREATE TABLE dead_letter_resolution (
    cluster         text        NOT NULL,
    topic           text        NOT NULL,
    partition       integer     NOT NULL,
    "offset"        bigint      NOT NULL,
    state           text        NOT NULL CHECK (state IN ('open', 'resolved', 'ignored', 'replayed')),
    exception_type  text        NOT NULL DEFAULT '',
    exception_cause text        NOT NULL DEFAULT '',
    actor           text        NOT NULL,
    at              timestamptz NOT NULL DEFAULT now(),
    reason          text        NOT NULL DEFAULT '',
    job_id          text        NOT NULL DEFAULT '',
    PRIMARY KEY (cluster, topic, partition, "offset")
);
-- Counting what is no longer open, per topic and partition (the overview, the exporter, the DLT
-- list) or per error group.
CREATE INDEX dead_letter_resolution_settled ON dead_letter_resolution (cluster, topic, partition, "offset")
    WHERE state <> 'open';
-- An error group's settled records, for its open count and for dropping a "new error group"
-- whose records were all resolved.
CREATE INDEX dead_letter_resolution_group ON dead_letter_resolution (cluster, topic, exception_type, exception_cause)
    WHERE state <> 'open';
