-- parley schema 2: a message id is unique per route (channel, chat), not across
-- every route: two chats may use the same id for two different messages.
CREATE TABLE inputs_by_route (
    channel     TEXT   NOT NULL,
    chat        TEXT   NOT NULL,
    message_id  TEXT   NOT NULL,
    ord         BIGINT NOT NULL UNIQUE,
    thread      TEXT   NOT NULL REFERENCES threads (id),
    text        TEXT   NOT NULL,
    state       TEXT   NOT NULL,
    detail      TEXT   NOT NULL,
    accepted_at BIGINT,
    PRIMARY KEY (channel, chat, message_id)
);

INSERT INTO inputs_by_route (channel, chat, message_id, ord, thread, text, state, detail, accepted_at)
    SELECT channel, chat, message_id, ord, thread, text, state, detail, accepted_at FROM inputs;

DROP INDEX inputs_by_state;
DROP TABLE inputs;
ALTER TABLE inputs_by_route RENAME TO inputs;
CREATE INDEX inputs_by_state ON inputs (state, ord);
