package cli

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/gitwork"
)

// A thread's change and shipping it from a terminal: parley diff, commit,
// push, pr (docs/protocol.md: the REST calls they make).

func init() {
	extraCommands = append(extraCommands, newDiffCommand, newCommitCommand, newPushCommand, newPRCommand)
}

func threadPath(id, what string) string { return "/api/threads/" + url.PathEscape(id) + "/" + what }

func newDiffCommand(Build) *cobra.Command {
	var f remoteFlags
	var stat bool
	var path string
	cmd := &cobra.Command{
		Use:   "diff THREAD [--stat] [--path P]",
		Short: "Print a thread's whole change since it started (git diff of its base, with untracked files)",
		Long: `Print everything the thread's working tree changed since the thread started:
what git diff BASE prints, followed by the untracked files (.gitignore respected),
read by parley serve. --stat prints a line per file instead; --path one file's.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			api := client.API{Server: server, Token: token}
			out := cmd.OutOrStdout()
			for off := 0; ; {
				q := url.Values{"offset": {fmt.Sprint(off)}}
				if path != "" {
					q.Set("path", path)
				}
				var c gitwork.Changes
				if err := api.Call(cmd.Context(), "GET", threadPath(args[0], "changes")+"?"+q.Encode(), nil, &c); err != nil {
					return err
				}
				if stat {
					printStat(cmd, c)
					return nil
				}
				fmt.Fprint(out, c.Patch)
				if !c.More {
					return nil
				}
				off = c.NextOffset
			}
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&stat, "stat", false, "a line per file: its status and lines added and deleted")
	cmd.Flags().StringVar(&path, "path", "", "one file's change (a path from the repository's top)")
	return cmd
}

func printStat(cmd *cobra.Command, c gitwork.Changes) {
	out := cmd.OutOrStdout()
	where := c.Branch
	if where == "" {
		where = "detached HEAD"
	}
	fmt.Fprintf(out, "%s since %s", where, short(c.Base))
	if c.Upstream != "" {
		fmt.Fprintf(out, " (%d ahead, %d behind %s)", c.Ahead, c.Behind, c.Upstream)
	} else if c.Ahead > 0 {
		fmt.Fprintf(out, " (%d commits since)", c.Ahead)
	}
	fmt.Fprintln(out)
	adds, dels := 0, 0
	for _, fl := range c.Files {
		name := fl.Path
		if fl.OldPath != "" {
			name = fl.OldPath + " => " + fl.Path
		}
		counts := fmt.Sprintf("+%d -%d", fl.Additions, fl.Deletions)
		if fl.Binary {
			counts = "binary"
		}
		fmt.Fprintf(out, " %-10s %-12s %s\n", fl.Status, counts, name)
		adds, dels = adds+fl.Additions, dels+fl.Deletions
	}
	fmt.Fprintf(out, " %d files changed, %d insertions(+), %d deletions(-)\n", len(c.Files), adds, dels)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "the first commit"
	}
	return commit
}

func newCommitCommand(Build) *cobra.Command {
	var f remoteFlags
	var message string
	var ask bool
	cmd := &cobra.Command{
		Use:   "commit THREAD (-m MSG | --ask-agent)",
		Short: "Commit everything a thread's working tree holds (your hooks run)",
		Long: `Stage everything in the thread's working tree (git add -A: untracked files too,
.gitignore respected) and commit it with MSG; your git config and hooks apply.
A hook that refuses leaves the index as it was. --ask-agent instead asks the
thread's agent to commit its work, as a message.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (message == "") == !ask {
				return fmt.Errorf("give the commit's message (-m MSG) or ask the agent (--ask-agent), one of the two")
			}
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			api := client.API{Server: server, Token: token}
			if ask {
				var sent struct{ MessageID, State, Detail string }
				if err := api.Call(cmd.Context(), "POST", threadPath(args[0], "commit"), map[string]any{"ask_agent": true}, &sent); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "asked the agent to commit (message %s: %s)\n", sent.MessageID, sent.State)
				return nil
			}
			var c gitwork.Committed
			if err := api.Call(cmd.Context(), "POST", threadPath(args[0], "commit"), map[string]any{"message": message}, &c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "committed on %s: %s\n", c.Branch, c.Summary)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&message, "message", "m", "", "the commit's message")
	cmd.Flags().BoolVar(&ask, "ask-agent", false, "ask the agent to commit instead")
	return cmd
}

func newPushCommand(Build) *cobra.Command {
	var f remoteFlags
	cmd := &cobra.Command{
		Use:   "push THREAD",
		Short: "Push the branch a thread's working tree has checked out",
		Long: `Push the thread's branch to its upstream's remote, or to origin (setting the
upstream). A rejected push (not a fast-forward) is an error with git's words.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			var p gitwork.Pushed
			if err := (client.API{Server: server, Token: token}).Call(cmd.Context(), "POST", threadPath(args[0], "push"), map[string]any{}, &p); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s to %s\n", p.Branch, p.Remote)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newPRCommand(Build) *cobra.Command {
	var f remoteFlags
	var title, body string
	cmd := &cobra.Command{
		Use:   "pr THREAD [--title T] [--body B]",
		Short: "Open a pull request for a thread's branch (gh), or print the page to open one",
		Long: `With gh installed and signed in on the machine running parley serve, open a pull
request for the thread's branch (gh pr create; --fill unless --title is given)
and print its address. Without gh, print the remote's compare page for it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			var pr gitwork.PullRequest
			in := map[string]any{"title": title, "body": body}
			if err := (client.API{Server: server, Token: token}).Call(cmd.Context(), "POST", threadPath(args[0], "pr"), in, &pr); err != nil {
				return err
			}
			if pr.Created {
				fmt.Fprintf(cmd.OutOrStdout(), "opened %s\n", pr.URL)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "open the pull request here: %s\n", strings.TrimSpace(pr.URL))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&title, "title", "", "the pull request's title")
	cmd.Flags().StringVar(&body, "body", "", "the pull request's description")
	return cmd
}
