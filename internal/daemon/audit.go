package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// auditTrail is the daemon's audit trail: the recorder every choke point
// records through, and its pruning sweep ([audit] keep).
type auditTrail struct {
	rec    *audit.Recorder
	st     *sqlite.Store
	cancel context.CancelFunc
	done   chan struct{}
}

func startAudit(ctx context.Context, st *sqlite.Store, keep time.Duration, log *slog.Logger) (*auditTrail, error) {
	rec, err := audit.Start(ctx, st, audit.Options{Keep: keep, Logger: log})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	a := &auditTrail{rec: rec, st: st, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if err := rec.Prune(pctx); err != nil && pctx.Err() == nil {
				log.Warn("audit: pruning failed", "err", err)
			}
			select {
			case <-t.C:
			case <-pctx.Done():
				return
			}
		}
	}()
	return a, nil
}

// close writes what is recorded; after the router and the web channel stop.
func (a *auditTrail) close() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
	a.rec.Close()
}

// maxAuditList caps one GET /api/audit answer.
const maxAuditList = 1000

// handleAudit is GET /api/audit: the newest entries, oldest first, narrowed
// by ?thread=, ?device=, ?kind=, ?since= (RFC 3339), ?after= and ?before=
// (a seq: the dashboard pages back with it), at most
// ?limit= (1000 unless less).
func (a *auditTrail) handleAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := audit.Filter{Thread: q.Get("thread"), Device: q.Get("device"), Kind: q.Get("kind"), Limit: maxAuditList}
	bad := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": msg})
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad("since: want a time such as 2026-01-02T15:04:05Z")
			return
		}
		f.Since = t
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			bad("after: want an entry's seq")
			return
		}
		f.After = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			bad("before: want an entry's seq")
			return
		}
		f.Before = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditList {
			bad("limit: want 1 to " + strconv.Itoa(maxAuditList))
			return
		}
		f.Limit = n
	}
	// What was recorded before this request is listed.
	if err := a.rec.Flush(r.Context()); err != nil {
		return
	}
	es, err := a.st.Audit(r.Context(), f)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if es == nil {
		es = []audit.Entry{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"entries": es})
}
