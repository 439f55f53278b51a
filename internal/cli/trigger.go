package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/trigger"
)

func init() {
	extraCommands = append(extraCommands, func(Build) *cobra.Command { return newTriggerCommand() })
}

func newTriggerCommand() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "trigger",
		Short: "Start a turn from a signed webhook (add, list, rm)",
		Long: `A trigger is a URL: POST a JSON body to it, signed as GitHub signs its
webhooks (X-Hub-Signature-256: sha256=HMAC-SHA256(secret, body)), and parley
sends the trigger's template, filled from the body's fields, to the agent.
X-GitHub-Delivery or X-Request-Id names the delivery: sent again, it is not
run again.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")

	var sp trigger.Spec
	var thread string
	add := &cobra.Command{
		Use:     "add --agent A --cwd DIR --template TEXT [--thread ID | --new]",
		Short:   "Add a trigger: prints its URL and its secret (shown this once)",
		Example: `  parley trigger add --agent claude --cwd ~/src/app --new --template "CI failed on {{.branch}}: {{.url}}"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			sp.Thread = chat.ThreadID(thread)
			if sp.Cwd != "" {
				if sp.Cwd, err = filepath.Abs(sp.Cwd); err != nil {
					return err
				}
			}
			var out struct {
				Trigger trigger.Trigger `json:"trigger"`
				Secret  string          `json:"secret"`
			}
			if err := api.Call(cmd.Context(), http.MethodPost, "/api/triggers", sp, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "url:    %s%s\n", strings.TrimRight(api.Server, "/"), out.Trigger.Path)
			fmt.Fprintf(w, "secret: %s\n", out.Secret)
			fmt.Fprintln(cmd.ErrOrStderr(), "(the secret is shown this once: give it to the sender, which signs each body with it)")
			return nil
		},
	}
	fl := add.Flags()
	fl.StringVar(&sp.Agent, "agent", "", "the agent that runs it")
	fl.StringVar(&sp.Cwd, "cwd", "", "its working directory, inside one of the agent's roots")
	fl.StringVar(&sp.Template, "template", "", `the text sent, with the body's fields: "CI failed on {{.branch}}"`)
	fl.StringVar(&thread, "thread", "", "send every run to this thread (default: a thread of the trigger's own)")
	fl.BoolVar(&sp.NewEach, "new", false, "start a new thread at each run")
	fl.StringVar(&sp.Name, "name", "", "a name shown with each run")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the triggers (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			var out struct {
				Triggers []trigger.Trigger `json:"triggers"`
			}
			if err := api.Call(cmd.Context(), http.MethodGet, "/api/triggers", nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out.Triggers)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tLAST RUN\tLAST THREAD\tTEMPLATE")
			for _, t := range out.Triggers {
				last := when(t.LastRun)
				if t.LastError != "" {
					last += " (failed: " + t.LastError + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%q\n", t.ID, t.Agent, last, t.LastThread, clip(t.Template, 50))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the triggers as a JSON list")
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a trigger: its URL answers 404 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			var out struct{}
			if err := api.Call(cmd.Context(), http.MethodDelete, "/api/triggers/"+url.PathEscape(args[0]), nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, list, rm)
	return cmd
}
