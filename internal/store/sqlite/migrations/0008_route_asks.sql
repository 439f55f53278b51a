-- parley schema 8: a route's ask for a new thread on another machine (on a
-- cluster's hub, an IM chat's `/agent claude@laptop`, `parley acp --agent
-- claude@laptop`): the route's next message starts it there. Kept so that a
-- hub restart keeps it; a route attached to a thread has none (attaching
-- drops it in the same transaction).
CREATE TABLE route_asks (
    channel TEXT NOT NULL,
    chat    TEXT NOT NULL,
    agent   TEXT NOT NULL,
    cwd     TEXT NOT NULL,
    node    TEXT NOT NULL,
    PRIMARY KEY (channel, chat)
);
