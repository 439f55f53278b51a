-- parley schema 10: on a cluster's hub, messages for a node's thread that
-- failed before the node took them (it refused them, they waited longer than
-- input_wait, the machine was revoked or never joined, its queue was full).
-- The node's log never held them, so the hub keeps them, shown in that
-- thread after a reload and found by search (search_row: its row in
-- search_rows, kind 'user', seq 0). One per route and message id: a retry
-- drops it.
CREATE TABLE remote_failed (
    channel    TEXT   NOT NULL,
    chat       TEXT   NOT NULL,
    message_id TEXT   NOT NULL,
    thread     TEXT   NOT NULL,
    text       TEXT   NOT NULL,
    reason     TEXT   NOT NULL,
    failed_at  BIGINT,
    search_row BIGINT,
    PRIMARY KEY (channel, chat, message_id)
);

CREATE INDEX remote_failed_by_thread ON remote_failed (thread, failed_at);
