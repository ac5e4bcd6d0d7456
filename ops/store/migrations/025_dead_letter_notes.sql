-- Notes on dead letters (issue 16): "investigating: INC-2231, fix in 4.2.1", on an error group of
-- a dead-letter source or on one of its messages. Append-only like the audit log they are also
-- written to: a note is corrected by another note.
CREATE TABLE dead_letter_note (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source          text        NOT NULL, -- kafka/<cluster>/<topic>
    exception_type  text,                 -- an error group's note: its type and cause
    exception_cause text,
    partition       integer,              -- a record's note: its partition and offset
    "offset"        bigint,
    actor           text        NOT NULL,
    at              timestamptz NOT NULL DEFAULT now(),
    text            text        NOT NULL,
    link            text        NOT NULL DEFAULT '',
    CHECK ((exception_type IS NULL) <> (partition IS NULL))
);
CREATE INDEX dead_letter_note_source ON dead_letter_note (source, at DESC);
