-- parley schema 20: the audit trail by kind (the daemon's start looks up
-- the last config file it recorded; `parley audit` and GET /api/audit
-- filter by kind) without reading the whole trail backwards.
CREATE INDEX audit_kind ON audit (kind, seq);
