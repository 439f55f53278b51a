package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

func init() {
	extraCommands = append(extraCommands, func(Build) *cobra.Command { return newAuditCommand() })
}

// newAuditCommand is `parley audit`: the audit trail, read from the data
// directory's database (read-only; the daemon may be running), and `parley
// audit verify`, which checks its chain.
func newAuditCommand() *cobra.Command {
	var f serveFlags
	var since, thread, device, kind string
	var asJSON bool
	open := func(cmd *cobra.Command) (*sqlite.AuditReader, error) {
		cfg, err := loadConfig(f)
		if err != nil {
			return nil, err
		}
		return sqlite.OpenAuditReader(cmd.Context(), filepath.Join(cfg.DataDir, "parley.db"))
	}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the audit trail: sign-ins, pairings, messages sent, card answers, …",
		Example: `  parley audit --since 24h
  parley audit --thread t_abc --json
  parley audit verify`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flt := audit.Filter{Thread: thread, Device: device, Kind: kind}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				flt.Since = t
			}
			r, err := open(cmd)
			if err != nil {
				return err
			}
			defer r.Close()
			es, err := r.Audit(cmd.Context(), flt)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				for _, e := range es {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tACTOR\tTHREAD\tSUBJECT")
			for _, e := range es {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.TS.Local().Format(time.DateTime), e.Kind, e.Actor, e.Thread, oneLine(e.Subject))
			}
			return tw.Flush()
		},
	}
	cmd.PersistentFlags().StringVar(&f.config, "config", envOr("PARLEY_CONFIG", ""), "config file (env PARLEY_CONFIG)")
	cmd.PersistentFlags().StringVar(&f.data, "data", "", "data directory (default: the config's)")
	cmd.Flags().StringVar(&since, "since", "", `only entries since then: a time (2026-01-02, RFC 3339) or an age ("24h", "7d")`)
	cmd.Flags().StringVar(&thread, "thread", "", "only a thread's entries")
	cmd.Flags().StringVar(&device, "device", "", "only what a device did (its id, as parley devices lists)")
	cmd.Flags().StringVar(&kind, "kind", "", "only entries of a kind (git.commit, session.continue, …)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON entry a line, with its hashes")
	cmd.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Check the audit trail's hash chain; name the first entry that does not match",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := open(cmd)
			if err != nil {
				return err
			}
			defer r.Close()
			n, err := audit.Verify(cmd.Context(), r)
			var m *audit.Mismatch
			if errors.As(err, &m) {
				return fmt.Errorf("the audit trail does not verify: %w (%d entries before it match)", err, n)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the audit trail verifies: %d entries, each linked to the one before\n", n)
			return nil
		},
	})
	return cmd
}

// parseSince reads --since: a date, an RFC 3339 time, or an age before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a date (2026-01-02), an RFC 3339 time or an age (24h, 7d)", s)
}
