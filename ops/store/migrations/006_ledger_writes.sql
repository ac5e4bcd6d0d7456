-- Cheaper ledger writes, same guarantees. A message costs one insert (its claim, or its final
-- skip) and one HOT update (active → published): no index reads `outcome` any more, so that update
-- touches no index. The once-only rule moves to `holds`, which a CHECK ties to the outcome: the
-- unique index still covers exactly the active and published rows.
ALTER TABLE replay_ledger ADD COLUMN holds boolean;
UPDATE replay_ledger SET holds = outcome IN ('active', 'published');
ALTER TABLE replay_ledger ALTER COLUMN holds SET NOT NULL,
    ADD CONSTRAINT replay_ledger_holds CHECK (holds = (outcome IN ('active', 'published')));
DROP INDEX replay_ledger_once;
CREATE UNIQUE INDEX replay_ledger_once ON replay_ledger (locator) WHERE holds;
DROP INDEX replay_ledger_job_outcome;
ALTER TABLE replay_ledger DROP CONSTRAINT replay_ledger_pkey, DROP COLUMN id,
    ADD CONSTRAINT replay_ledger_pkey PRIMARY KEY USING INDEX replay_ledger_job_seq;
-- The engine writes ledger rows only for jobs it created, and plan items only inside the plan's own
-- transaction: the per-row foreign-key checks cost more than the claim itself and guard nothing.
ALTER TABLE replay_ledger DROP CONSTRAINT replay_ledger_job_id_fkey;
ALTER TABLE replay_plan_item DROP CONSTRAINT replay_plan_item_plan_id_fkey;
-- Room on each page for the settling update's new row version (HOT needs the same page).
ALTER TABLE replay_ledger SET (fillfactor = 60);

-- A job's counts, kept in the same transaction as the ledger rows they count: progress polls and
-- the exporter read one row instead of counting the ledger.
ALTER TABLE replay_job ADD COLUMN published int NOT NULL DEFAULT 0,
    ADD COLUMN skipped int NOT NULL DEFAULT 0, ADD COLUMN failed int NOT NULL DEFAULT 0;
UPDATE replay_job j SET published = c.published, skipped = c.skipped, failed = c.failed
FROM (SELECT job_id, count(*) FILTER (WHERE outcome = 'published') AS published,
        count(*) FILTER (WHERE outcome = 'skipped') AS skipped, count(*) FILTER (WHERE outcome = 'failed') AS failed
      FROM replay_ledger GROUP BY job_id) c
WHERE c.job_id = j.id;
