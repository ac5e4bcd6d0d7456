-- The audit log is append-only: the console has no UPDATE/DELETE path, and the database refuses one.
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL,
    role        text NOT NULL DEFAULT '',
    source_ip   text NOT NULL DEFAULT '',
    user_agent  text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target      text NOT NULL,
    count       bigint,
    reason      text NOT NULL DEFAULT '',
    outcome     text NOT NULL,
    detail      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_actor_at ON audit_log (actor, at DESC);
CREATE INDEX audit_log_action_at ON audit_log (action, at DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'redrive.audit_log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
