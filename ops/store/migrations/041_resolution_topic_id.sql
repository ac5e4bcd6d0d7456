-- A dead letter's resolution belongs to one topic, not to its name: a topic deleted and created
-- again under the same name holds other records at the same offsets, and they are open. topic_id
-- is the Kafka topic ID the record was read under when it was marked (hex); a mark is read only
-- for that topic (ops/store/triage.go, sameTopic). '' is a mark written before this column, or
-- under a broker without topic IDs: it keeps counting for whatever topic has the name, as before.
ALTER TABLE dead_letter_resolution ADD COLUMN topic_id text NOT NULL DEFAULT '';
