-- parley schema 15: approval rules a person made in the dashboard or from a
-- card (internal/ruleset). They answer after the config's [[rule]]s, in the
-- order they were made. `rule` is the rule as JSON (internal/rules.Rule);
-- `since` is when its `for` started to count (made or last edited).
CREATE TABLE rules (
    id          TEXT PRIMARY KEY,
    rule        TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    created_by  TEXT   NOT NULL DEFAULT '', -- the device's name, or 'token'
    since       BIGINT NOT NULL
);
