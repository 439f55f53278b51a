-- parley schema 9: each ask for a new thread on another machine has an id,
-- sent with the message that starts it (kept on the hub in route_asks.ask_id;
-- the asks an older parley kept take one in this migration's Go step), and
-- the machine that makes the thread keeps which ask made it (thread_asks), so
-- the same ask asked again (a hub killed before it heard the answer, then
-- asking with the route's next message) gets the same thread, never a second.
ALTER TABLE route_asks ADD COLUMN ask_id TEXT NOT NULL DEFAULT '';

CREATE TABLE thread_asks (
    ask_id TEXT NOT NULL PRIMARY KEY,
    thread TEXT NOT NULL REFERENCES threads (id)
);
