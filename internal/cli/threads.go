package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

func newThreadsCommand(Build) *cobra.Command {
	var f remoteFlags
	var asJSON, archived bool
	var search string
	cmd := &cobra.Command{
		Use:   "threads",
		Short: "List, search and manage threads",
		Long: `List the daemon's threads, newest first; archived threads are left out
(--archived lists them instead). --search TEXT finds threads by title and
message text instead: every word must match, as a prefix ("deplo" finds
"deploy"); "words in quotes" match as a phrase. --json prints a JSON array of
thread objects (id, agent, cwd, session_id, title, state, mode, created_at,
updated_at, last_seq, archived; node on a cluster's hub for another machine's
thread), or of search hits (thread, seq, kind, snippet, title, archived), for
scripts. On a cluster's hub a MACHINE column names each thread's machine.

The subcommands rename, archive, unarchive and delete manage one thread.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			api := client.API{Server: server, Token: token}
			out := cmd.OutOrStdout()
			if cmd.Flags().Changed("search") {
				hits, unsearched, err := api.SearchAll(cmd.Context(), search)
				if err != nil {
					return err
				}
				for _, u := range unsearched { // a hub's search that did not cover a machine says so
					fmt.Fprintf(cmd.ErrOrStderr(), "machine %s not searched: %s\n", u.Node, u.Reason)
				}
				if asJSON {
					return writeJSONList(out, hits)
				}
				return printHits(out, hits)
			}
			list := api.Threads
			if archived {
				list = api.ArchivedThreads
			}
			ths, err := list(cmd.Context())
			if err != nil {
				return err
			}
			slices.SortFunc(ths, func(a, b chat.Thread) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
			if asJSON {
				return writeJSONList(out, ths)
			}
			if len(ths) == 0 {
				if archived {
					fmt.Fprintln(out, "no archived threads")
				} else {
					fmt.Fprintln(out, "no threads yet")
				}
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
	cmd.Flags().BoolVar(&archived, "archived", false, "list the archived threads")
	cmd.Flags().StringVar(&search, "search", "", "find threads by title and message text")
	cmd.MarkFlagsMutuallyExclusive("archived", "search")
	for _, sub := range []*cobra.Command{
		threadCommand("rename ID TITLE", "Give a thread a title of your own", 2, func(cmd *cobra.Command, api client.API, args []string) error {
			th, err := api.EditThread(cmd.Context(), chat.ThreadID(args[0]), &args[1], nil)
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is now %q\n", th.ID, th.Title)
			}
			return err
		}),
		threadCommand("archive ID", "Hide a thread from the list (it stays readable; writing to it brings it back)", 1, func(cmd *cobra.Command, api client.API, args []string) error {
			_, err := api.EditThread(cmd.Context(), chat.ThreadID(args[0]), nil, ptrTo(true))
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s archived\n", args[0])
			}
			return err
		}),
		threadCommand("unarchive ID", "Bring an archived thread back to the list", 1, func(cmd *cobra.Command, api client.API, args []string) error {
			_, err := api.EditThread(cmd.Context(), chat.ThreadID(args[0]), nil, ptrTo(false))
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is back in the list\n", args[0])
			}
			return err
		}),
		deleteThreadCommand(),
	} {
		cmd.AddCommand(sub)
	}
	return cmd
}

func ptrTo[T any](v T) *T { return &v }

// threadCommand is a subcommand of threads acting on one thread.
func threadCommand(use, short string, nargs int, run func(*cobra.Command, client.API, []string) error) *cobra.Command {
	var sf remoteFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, token, err := sf.resolve()
			if err != nil {
				return err
			}
			return run(cmd, client.API{Server: server, Token: token}, args)
		},
	}
	sf.register(cmd)
	cmd.Flags().Lookup("chat").Hidden = true
	return cmd
}

// deleteThreadNote is what parley threads delete says before it deletes
// (the daemon's words after: router.DeletedNote).
const deleteThreadNote = `Deleting a thread removes its messages, cards and search entries from parley.
The agent's own session (for Claude Code, its session file under
~/.claude/projects) is left on disk: parley never deletes the agent's files.
Files attached to its messages stay in the working folder's .parley-uploads.
A running turn is stopped first, and every screen showing the thread closes.`

func deleteThreadCommand() *cobra.Command {
	var yes bool
	cmd := threadCommand("delete ID", "Delete a thread from parley (the agent's own session file stays)", 1, func(cmd *cobra.Command, api client.API, args []string) error {
		out := cmd.OutOrStdout()
		if !yes {
			fmt.Fprintln(out, deleteThreadNote)
			return fmt.Errorf("nothing deleted: run it again with --yes to delete %s", args[0])
		}
		if _, err := api.DeleteThread(cmd.Context(), chat.ThreadID(args[0])); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s deleted; the agent's own session file was left on disk\n", args[0])
		return nil
	})
	cmd.Long = deleteThreadNote
	cmd.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	return cmd
}

// printHits prints search hits: the thread, where in it, and the text.
func printHits(out io.Writer, hits []chat.SearchHit) error {
	if len(hits) == 0 {
		fmt.Fprintln(out, "nothing found")
		return nil
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tWHERE\tTITLE\tTEXT")
	for _, h := range hits {
		where := h.Kind
		if h.Seq > 0 {
			where += fmt.Sprintf(" #%d", h.Seq)
		}
		title := h.Title
		if h.Archived {
			title += " (archived)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Thread, where, oneLine(title), oneLine(h.Snippet))
	}
	return tw.Flush()
}

// oneLine keeps a text on its row: line breaks and tabs become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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
