package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
)

func init() {
	extraCommands = append(extraCommands,
		func(Build) *cobra.Command { return newPairCommand() },
		func(Build) *cobra.Command { return newDevicesCommand() })
}

// localAPI is the REST client of the running local daemon, with the shared token.
func localAPI(data string) (client.API, error) {
	if data == "" {
		data = config.DefaultDataDir()
	}
	server, token, err := client.Local(data)
	return client.API{Server: server, Token: token}, err
}

func newPairCommand() *cobra.Command {
	var data, name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pair",
		Short: "Pair a phone or another device: print a QR code and the one-time link it holds",
		Long: `Pair a device with the running daemon. parley prints a QR code and the link it
encodes; opening the link (scanning the code) signs that device in with a
session of its own, which ` + "`parley devices revoke`" + ` can end. The link works once,
within a few minutes. A program pairs with POST /api/pair {"code","name"}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			var out struct {
				URL       string    `json:"url"`
				Code      string    `json:"code"`
				ExpiresAt time.Time `json:"expires_at"`
			}
			if err := api.Call(ctx, http.MethodPost, "/api/pair-codes", map[string]string{"name": name}, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(out)
			}
			q, err := qrcode.New(out.URL, qrcode.Medium)
			if err != nil {
				return err
			}
			fmt.Fprint(w, q.ToSmallString(false))
			fmt.Fprintf(w, "%s\n", out.URL)
			fmt.Fprintf(cmd.ErrOrStderr(), "(signs one device in, once, until %s; the phone must reach this address: see the README, \"From a phone\")\n",
				out.ExpiresAt.Local().Format(time.Kitchen))
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	cmd.Flags().StringVar(&name, "name", "", "the device's name in the device list (default: phone)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"url","code","expires_at"} instead of the QR code`)
	return cmd
}

// deviceRow is a device as GET /api/devices lists it.
type deviceRow struct {
	auth.Device
	Push bool `json:"push"`
}

func newDevicesCommand() *cobra.Command {
	var data string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List the signed-in devices (revoke ID ends one at once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			var out struct {
				Devices []deviceRow `json:"devices"`
			}
			if err := api.Call(cmd.Context(), http.MethodGet, "/api/devices", nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out.Devices)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tKIND\tPAIRED\tLAST SEEN\tPUSH")
			for _, d := range out.Devices {
				push := "off"
				if d.Push {
					push = "on"
				}
				fmt.Fprintf(tw, "%s\t%q\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Kind,
					d.PairedAt.Local().Format(time.DateTime), d.LastSeen.Local().Format(time.DateTime), push)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the devices as a JSON list")
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "End a device at once: its session stops working and its open sockets close",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := localAPI(data)
			if err != nil {
				return err
			}
			var out struct{}
			if err := api.Call(cmd.Context(), http.MethodDelete, "/api/devices/"+url.PathEscape(args[0]), nil, &out); err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
			return nil
		},
	}
	revoke.Flags().StringVar(&data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	cmd.AddCommand(revoke)
	return cmd
}
