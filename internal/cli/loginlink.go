package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
)

// newLoginLinkCommand prints a fresh one-time sign-in link for the running
// daemon, so a person can sign a browser in again without the token.
func newLoginLinkCommand() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "login-link",
		Short: "Print a one-time sign-in link for the running daemon's dashboard",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				data = config.DefaultDataDir()
			}
			server, token, err := client.Local(data)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/api/login-codes", nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("parley at %s: %w", server, err)
			}
			defer resp.Body.Close()
			var out struct {
				Path      string    `json:"path"`
				ExpiresAt time.Time `json:"expires_at"`
				Error     struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("parley at %s: %s %s", server, resp.Status, out.Error.Message)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s%s\n", strings.TrimRight(server, "/"), out.Path)
			fmt.Fprintf(cmd.ErrOrStderr(), "(signs one browser in, once, until %s)\n", out.ExpiresAt.Local().Format(time.Kitchen))
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	return cmd
}
