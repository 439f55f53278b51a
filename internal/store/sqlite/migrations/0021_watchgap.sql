-- parley schema 21: how far a watched or adopted session's transcript was shown (the
-- byte after its last whole record read), so that a restarted parley brings
-- into the thread what the session wrote while it was stopped. 0: not known
-- (an attachment from before), followed from the transcript's end.
ALTER TABLE thread_attach ADD COLUMN transcript_at INTEGER NOT NULL DEFAULT 0;
