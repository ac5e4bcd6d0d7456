-- Time lag (issue 17): how far behind in time the group's furthest-behind partition was when
-- sampled, in milliseconds; -1 when unknown (rows written before time lag was sampled, or no
-- lagging partition's record could be read). Charts show it beside the offset lag.
ALTER TABLE kafka_group_sample ADD COLUMN max_lag_ms bigint NOT NULL DEFAULT -1;
