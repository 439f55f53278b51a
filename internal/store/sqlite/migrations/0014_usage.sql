-- parley schema 13: the Usage view (GET /api/usage) reads every thread's
-- usage events by time, not every event.
CREATE INDEX events_usage ON events (ts) WHERE type = 'usage';
