-- Four-eyes: who approved a job that had to wait for a second person.
ALTER TABLE replay_job ADD COLUMN approved_by text NOT NULL DEFAULT '';
