-- A RabbitMQ or outbox job finds a delivered message's plan item by its locator, batch by batch,
-- instead of holding the whole plan in memory. Kafka items (with a partition) are found by seq.
CREATE INDEX replay_plan_item_locator ON replay_plan_item (plan_id, locator) WHERE partition IS NULL;
