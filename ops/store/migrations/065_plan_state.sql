-- A plan is made in the background (issue 38): its header is written first, in state
-- 'planning', and its items chunk by chunk as they are read, each chunk committed; it becomes
-- 'ready' in one update once every item is stored — or 'cancelled' or 'failed', when its items are
-- dropped. A job runs only a ready plan. `planned` and `actions` say how far planning got (a
-- progress poll reads one row), `estimate` how many messages the selection reads at most, and
-- `heartbeat` that the replica making it is alive: a planning plan whose heartbeat stopped was
-- left by a console that stopped, and is marked failed by whoever sees it first.
ALTER TABLE replay_plan ADD COLUMN state text NOT NULL DEFAULT 'ready',
    ADD COLUMN planned int NOT NULL DEFAULT 0,
    ADD COLUMN estimate int NOT NULL DEFAULT 0,
    ADD COLUMN error text NOT NULL DEFAULT '',
    ADD COLUMN owner text NOT NULL DEFAULT '',
    ADD COLUMN heartbeat timestamptz,
    ADD COLUMN finished_at timestamptz;
CREATE INDEX replay_plan_planning ON replay_plan (heartbeat) WHERE state = 'planning';
