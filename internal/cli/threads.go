package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

func newThreadsCommand(Build) *cobra.Command {
	var f remoteFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "threads",
		Short: "List threads, newest first",
		Long: `List the daemon's threads, newest first. --json prints a JSON array of thread
objects (id, agent, cwd, session_id, title, state, mode, created_at,
updated_at, last_seq; node on a cluster's hub for another machine's thread),
for scripts. On a cluster's hub a MACHINE column names each thread's machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			ths, err := client.API{Server: server, Token: token}.Threads(cmd.Context())
			if err != nil {
				return err
			}
			slices.SortFunc(ths, func(a, b chat.Thread) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSONList(out, ths)
			}
			if len(ths) == 0 {
				fmt.Fprintln(out, "no threads yet")
				return nil
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			// On a cluster's hub, the machine each thread runs on.
			machines := slices.ContainsFunc(ths, func(th chat.Thread) bool { return th.Node != "" })
			if machines {
				fmt.Fprint(tw, "MACHINE\t")
			}
			fmt.Fprintln(tw, "ID\tAGENT\tSTATE\tUPDATED\tCWD\tTITLE")
			for _, th := range ths {
				if machines {
					fmt.Fprintf(tw, "%s\t", cmp.Or(th.Node, "(this one)"))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", th.ID, th.Agent, th.State, ago(th.UpdatedAt), th.Cwd, th.Title)
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	cmd.Flags().Lookup("chat").Hidden = true
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

// writeJSONList prints a list as indented JSON; an empty one is [], never null.
func writeJSONList[T any](out io.Writer, list []T) error {
	if list == nil {
		list = []T{}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}
