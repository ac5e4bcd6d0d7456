-- The redaction rules an error group's sample_message was masked by when it was stored
-- (redact.Rules.Digest): read back under the same rules it is shown as stored; under others (a
-- reload added a JSON path the stored text may quote) it is masked again by what can be told
-- without the record. '' for rows written before, and by a console without rules.
ALTER TABLE error_group ADD COLUMN sample_masked_by text NOT NULL DEFAULT '';
