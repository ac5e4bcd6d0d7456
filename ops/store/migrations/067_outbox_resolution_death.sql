-- The death a resolved or ignored mark of an outbox event is about: the event's id and the
-- available_at its relay left when it went DEAD (outbox.Event.Death). A row id that dies again —
-- requeued by the service's own tooling, or by an operator whose reopen did not reach the store —
-- has another available_at, and is open again rather than hidden by the decision about its earlier
-- death. '' for marks written before: they match any death, as they did.
ALTER TABLE outbox_resolution ADD COLUMN death text NOT NULL DEFAULT '';
