-- A plan's counts per error group and action, computed while the plan is made: the plan page shows
-- them for the whole plan, not only for the items it lists.
ALTER TABLE replay_plan ADD COLUMN error_groups jsonb NOT NULL DEFAULT '{}';
