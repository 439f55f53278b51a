-- parley schema 18: a thread's model, the one its agent last said was in
-- force (as the agent's list names it), so a restarted agent is asked for it
-- again: Claude Code resumed without --model takes the transcript's model
-- id, which drops the 1M-context suffix ("opus[1m]" came back as
-- claude-opus-4-8 with 200k).
ALTER TABLE threads ADD COLUMN model TEXT NOT NULL DEFAULT '';
