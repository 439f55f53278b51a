-- parley schema 22: a node's answers to the hub's ship requests (commit, push,
-- pull request), by the request's key (its kind, thread and id), so that the
-- same request sent again after the node restarted is answered with the first
-- answer instead of being applied twice. Kept a week (Store.KeepShipAnswer).
CREATE TABLE ship_answers (
	key    TEXT   NOT NULL PRIMARY KEY,
	answer BLOB   NOT NULL,
	at     BIGINT NOT NULL
);
CREATE INDEX ship_answers_at ON ship_answers (at);
