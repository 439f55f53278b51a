-- parley schema 6: routes showing a thread another machine owns (on a
-- cluster's hub, a node's `<thread>@<node>`). No row of threads holds such a
-- thread, so they have their own table, with no reference; a route is in
-- routes or here, never in both.
CREATE TABLE remote_routes (
    channel    TEXT   NOT NULL,
    chat       TEXT   NOT NULL,
    thread     TEXT   NOT NULL,
    updated_at BIGINT,
    PRIMARY KEY (channel, chat)
);
