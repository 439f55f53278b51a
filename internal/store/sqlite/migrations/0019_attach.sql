-- parley schema 19: the person's process a thread follows instead of its own
-- (an adopted tmux pane, a watched plain terminal), kept so that a restarted
-- parley follows it again rather than refuse the thread its own session. The
-- process's start time (field 22 of /proc/<pid>/stat) tells it from a later
-- process given the same pid.
CREATE TABLE thread_attach (
    thread     TEXT    NOT NULL PRIMARY KEY,
    kind       TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    proc_start TEXT    NOT NULL DEFAULT '',
    server     TEXT    NOT NULL DEFAULT '',
    pane       TEXT    NOT NULL DEFAULT ''
);
