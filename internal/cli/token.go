package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/config"
)

func newTokenCommand() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print the access token (made at first start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				data = config.DefaultDataDir()
			}
			warning, err := auth.SecureDir(data)
			if err != nil {
				return err
			}
			if warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "parley: "+warning)
			}
			tok, err := auth.LoadOrCreate(data)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	return cmd
}
