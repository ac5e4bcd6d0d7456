-- A plan page lists the jobs that ran it.
CREATE INDEX replay_job_plan ON replay_job (plan_id, created_at DESC);
