-- Sign-in sessions of auth.mode basic, shared by every console replica. The cookie carries a random
-- token; only its SHA-256 is stored, so a copy of this table signs nobody in. A session ends at
-- idle_expires_at (pushed forward while it is used, never past expires_at) or at expires_at.
CREATE TABLE session (
    token_sha256     bytea       PRIMARY KEY,
    user_name        text        NOT NULL,
    role             text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_seen_at     timestamptz NOT NULL DEFAULT now(),
    idle_expires_at  timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    CHECK (idle_expires_at <= expires_at)
);
-- Expired sessions are deleted by time.
CREATE INDEX session_idle_expires_at ON session (idle_expires_at);
