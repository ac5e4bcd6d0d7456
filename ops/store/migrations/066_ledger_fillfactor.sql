-- Room on every page for all of its rows' settling updates. A job settles a batch of its claims
-- (active → published) in one statement, so every row of a page gets its new version in the same
-- transaction, when none of the old ones can be pruned yet: the new versions must all fit beside
-- them for the update to stay HOT (no index entry). At fillfactor 60 they did only while rows were
-- short; with a RabbitMQ locator and message id (rows of ~210 bytes) a third of the updates
-- found their page full, went to another and wrote an entry in every index, the once-only one
-- with its uniqueness check: the settle took twice as long. 45 leaves more than each row's size
-- again free (the new version grows by 'published' over 'active', at most one alignment step).
ALTER TABLE replay_ledger SET (fillfactor = 45);
