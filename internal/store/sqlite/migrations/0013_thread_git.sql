-- parley schema 13: a thread's git: the commit HEAD named when it started
-- (the base its change is counted from) and the worktree parley made for it
-- (removed with it when asked). Both are set when the thread is made and
-- never change.
ALTER TABLE threads ADD COLUMN git_base TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN worktree TEXT NOT NULL DEFAULT '';
