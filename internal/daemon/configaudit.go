package daemon

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// configRead is a config.change entry's detail: the file parley read.
type configRead struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256,omitempty"`
}

// recordConfig puts the config file in the audit trail when it differs from
// the one the last start read (another file, other bytes, or none now): the
// daemon reads its config once, at start, so an edit shows at the start that
// reads it. A trail that never recorded one records the first file read.
func recordConfig(ctx context.Context, st *sqlite.Store, rec audit.Log, cfg config.Config) error {
	now := configRead{File: cfg.File, SHA256: cfg.FileSHA256}
	last, err := st.Audit(ctx, audit.Filter{Kind: audit.KindConfigChange, Limit: 1})
	if err != nil {
		return err
	}
	var was configRead
	if len(last) > 0 {
		_ = json.Unmarshal(last[0].Detail, &was) // a detail that does not read differs
	}
	if now == was {
		return nil
	}
	subject := "config file " + now.File + " changed since parley last read it"
	switch {
	case len(last) == 0:
		subject = "config file " + now.File + " read"
	case now.File == "":
		subject = "no config file read (" + was.File + " was)"
	case now.File != was.File:
		subject = "config file " + now.File + " read (" + firstNonEmptyStr(was.File, "none") + " was)"
	}
	d, _ := json.Marshal(now)
	rec.Record(audit.Entry{Kind: audit.KindConfigChange, Actor: audit.ActorParley, Subject: subject, Detail: d})
	return nil
}

func firstNonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
