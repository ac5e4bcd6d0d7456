-- Why a running job is waiting (a store, broker or inbox went away); '' while it makes progress.
ALTER TABLE replay_job ADD COLUMN paused text NOT NULL DEFAULT '';
