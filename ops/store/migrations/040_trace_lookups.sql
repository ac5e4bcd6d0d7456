-- Trace (issue 20): "what happened to this message?" looks the ledger up by message id. The
-- ledger is read by job everywhere else; without this index a trace would read all of it.
CREATE INDEX IF NOT EXISTS replay_ledger_message_id ON replay_ledger (message_id) WHERE message_id <> '';
