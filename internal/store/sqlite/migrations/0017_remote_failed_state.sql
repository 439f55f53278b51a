-- parley schema 17: a message for another machine's thread that ended at the
-- hub after it may have reached its machine (revoked, or past input_wait
-- after a hand-over with no answer) reads "unknown", not "failed".
ALTER TABLE remote_failed ADD COLUMN state TEXT NOT NULL DEFAULT 'failed';
