package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/schedule"
)

func init() {
	extraCommands = append(extraCommands, func(Build) *cobra.Command { return newScheduleCommand() })
}

func newScheduleCommand() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Send a text to an agent on a schedule (add, list, pause, resume, rm)",
		Long: `Schedules run on the machine whose daemon keeps them: at each due time parley
sends the text to the agent as a message from the schedule (shown so in
the thread), once, even across a crash at that moment.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")

	var sp schedule.Spec
	var thread string
	add := &cobra.Command{
		Use:   "add --agent A --cwd DIR (--cron EXPR | --every DUR | --at TIME) [--thread ID | --new] [--machine M] TEXT",
		Short: "Add a schedule",
		Example: `  parley schedule add --agent claude --cwd ~/src/app --cron "0 9 * * 1-5" "Summarise yesterday's commits"
  parley schedule add --agent claude --cwd ~/src/app --every 2h --new "Check the flaky tests"
  parley schedule add --agent claude --cwd ~/src/app --at 2026-12-24T09:00:00Z "Tag the release"
  parley schedule add --machine laptop --agent claude --cwd /home/me/app --every 2h "Run the tests"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			sp.Text = strings.Join(args, " ")
			sp.Thread = chat.ThreadID(thread)
			switch {
			case sp.Cwd != "" && sp.Machine != "" && !filepath.IsAbs(sp.Cwd):
				return fmt.Errorf("--cwd %q: with --machine give the directory's absolute path on that machine", sp.Cwd)
			case sp.Cwd != "" && sp.Machine == "":
				if sp.Cwd, err = filepath.Abs(sp.Cwd); err != nil {
					return err
				}
			}
			// One id for this add, however often it is sent: kept once.
			if sp.ID == "" {
				sp.ID = chat.NewID("sch")
			}
			s, err := sendAdd[schedule.Schedule](cmd.Context(), api, "/api/schedules", sp, sp.ID,
				addKind{what: "schedule", list: "parley schedule list"}, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: next run %s\n", s.ID, when(s.NextRun))
			return nil
		},
	}
	fl := add.Flags()
	fl.StringVar(&sp.Agent, "agent", "", "the agent that runs it (parley agents lists them)")
	fl.StringVar(&sp.Cwd, "cwd", "", "its working directory, inside one of the agent's roots")
	fl.StringVar(&sp.Cron, "cron", "", `a cron expression: minute hour day-of-month month day-of-week ("0 9 * * 1-5"), or @daily, @hourly…`)
	fl.StringVar(&sp.Every, "every", "", "an interval of at least 1m (90m, 2h), from now")
	fl.StringVar(&sp.At, "at", "", "once, at an RFC 3339 time (2026-12-24T09:00:00Z)")
	fl.StringVar(&thread, "thread", "", "send every run to this thread (default: a thread of the schedule's own, made by its first run)")
	fl.BoolVar(&sp.NewEach, "new", false, "start a new thread at each run")
	fl.StringVar(&sp.TZ, "tz", "", "the time zone of --cron (an IANA name; default the machine's)")
	fl.StringVar(&sp.Missed, "missed", schedule.MissedRunOnce, "runs missed while parley was down: run-once (one run at start) or skip")
	fl.StringVar(&sp.Name, "name", "", "a name shown with each run")
	fl.StringVar(&sp.ID, "id", "", "the schedule's id (default a fresh one): the same add sent again with its id is made once")
	fl.StringVar(&sp.Machine, "machine", "", "at a cluster's hub: the machine that keeps and runs it (default the hub)")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the schedules with their next and last run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			var out struct {
				Schedules []schedule.Schedule `json:"schedules"`
				Unlisted  []schedule.Unlisted `json:"unlisted"`
			}
			if err := api.Call(cmd.Context(), http.MethodGet, "/api/schedules", nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			for _, u := range out.Unlisted {
				fmt.Fprintf(cmd.ErrOrStderr(), "machine %s: its schedules are not listed: %s\n", u.Node, u.Reason)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out.Schedules)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWHEN\tAGENT\tNEXT RUN\tLAST RUN\tLAST THREAD\tTEXT")
			for _, s := range out.Schedules {
				next := when(s.NextRun)
				if s.Paused {
					next = "paused"
				}
				last := when(s.LastRun)
				if s.LastError != "" {
					last += " (failed: " + s.LastError + ")"
				}
				fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\t%q\n", s.ID, s.Kind, s.Expr, s.Agent, next, last, s.LastThread, clip(s.Text, 40))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the schedules as a JSON list")

	cmd.AddCommand(add, list,
		scheduleAction(&data, "pause", "Pause a schedule: no run until it is resumed", http.MethodPost, "/pause"),
		scheduleAction(&data, "resume", "Resume a schedule: its next run is the next one due from now", http.MethodPost, "/resume"),
		scheduleAction(&data, "rm", "Remove a schedule (its runs stay in their threads)", http.MethodDelete, ""))
	return cmd
}

func scheduleAction(data *string, verb, short, method, suffix string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := localAPI(*data)
			if err != nil {
				return err
			}
			var out struct{}
			if err := api.Call(cmd.Context(), method, "/api/schedules/"+url.PathEscape(args[0])+suffix, nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], map[string]string{"pause": "paused", "resume": "resumed", "rm": "removed"}[verb])
			return nil
		},
	}
}

// when prints a time for a person, in the local zone; "-" for none.
func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04 MST")
}

// clip cuts s to n characters for a table.
func clip(s string, n int) string {
	r := []rune(strings.ReplaceAll(s, "\n", " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
