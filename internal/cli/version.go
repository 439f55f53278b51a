package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/cluster"
)

func newVersionCommand(b Build) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print what this binary is",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, uiHash := dashboard()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
					Build
					UIHash          string `json:"ui_hash"`
					ClusterProtocol int    `json:"cluster_protocol"`
				}{b, uiHash, cluster.Protocol()})
			}
			// The cluster protocol decides which hubs and nodes link (docs/multi-machine.md).
			fmt.Fprintf(cmd.OutOrStdout(), "parley %s (commit %s, built %s, dashboard %s, cluster protocol %d)\n",
				b.Version, orNone(b.Commit), orNone(b.Built), uiHash[:12], cluster.Protocol())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
