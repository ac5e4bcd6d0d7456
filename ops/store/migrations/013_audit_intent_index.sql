-- The audit list shows an intent row ("started") only while no outcome row names it: the outcome
-- row (detail.intent_id) is what says what happened.
CREATE INDEX audit_log_intent ON audit_log ((detail->>'intent_id')) WHERE detail ? 'intent_id';
