-- parley schema 12: a device's optional push of notices (an agent's
-- notify_person, parley notify): when it was turned on, 0 while off.
ALTER TABLE push_prefs ADD COLUMN notices_since BIGINT NOT NULL DEFAULT 0;
