-- One job moves a source at a time: a second job on the same DLQ would find the first one's
-- messages held unacked and report them missing; on the same DLT or outbox it would race it.
ALTER TABLE replay_job ADD COLUMN source_key text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX replay_job_one_per_source ON replay_job (source_key)
    WHERE source_key <> '' AND status IN ('pending', 'running');
-- Why an item is skipped when the reason is not its action alone (a message id or destination
-- holding bytes that cannot be used).
ALTER TABLE replay_plan_item ADD COLUMN note text NOT NULL DEFAULT '';
