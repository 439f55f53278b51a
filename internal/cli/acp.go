package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coder/websocket"
	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/client"
)

func init() { extraCommands = append(extraCommands, newACPCommand) }

type acpFlags struct {
	remoteFlags
	agent, thread string
}

func newACPCommand(Build) *cobra.Command {
	var f acpFlags
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Be an ACP agent on stdio, relaying to the running daemon (for editors)",
		Long: `Speak the Agent Client Protocol as an agent on stdin/stdout, so an editor (Zed,
or anything built on an ACP SDK) can talk to the agents parley hosts and see what
the dashboard sees. Every JSON-RPC line is relayed unchanged to the daemon's
/ws/acp endpoint, where parley itself plays the agent (docs/plugin-protocol.md).

--agent chooses the agent of new sessions; --thread attaches new sessions to an
existing thread (the one a browser shows, say).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runACP(ctx, f, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.agent, "agent", "", "agent of new sessions (default: the daemon's default agent)")
	cmd.Flags().StringVar(&f.thread, "thread", "", "attach new sessions to this thread")
	return cmd
}

func runACP(ctx context.Context, f acpFlags, in io.Reader, out io.Writer) error {
	server, token, err := f.resolve()
	if err != nil {
		return err
	}
	q := url.Values{}
	if f.agent != "" {
		q.Set("agent", f.agent)
	}
	if f.thread != "" {
		q.Set("thread", f.thread)
	}
	u, err := client.SocketURL(server, "/ws/acp", q)
	if err != nil {
		return fmt.Errorf("acp: %w", err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return fmt.Errorf("acp: connect to %s: %w", server, err)
	}
	ws.SetReadLimit(16 << 20)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer ws.CloseNow()
	down := make(chan error, 1)
	go func() {
		// Daemon → stdout: each frame is one JSON-RPC line.
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				down <- err
				return
			}
			if len(b) == 0 || b[len(b)-1] != '\n' {
				b = append(b, '\n')
			}
			if _, err := out.Write(b); err != nil {
				down <- err
				return
			}
		}
	}()
	up := make(chan error, 1)
	go func() {
		// stdin → daemon: one frame per line.
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(strings.TrimSpace(string(line))) == 0 {
				continue
			}
			if err := ws.Write(ctx, websocket.MessageText, append(append([]byte(nil), line...), '\n')); err != nil {
				up <- err
				return
			}
		}
		up <- sc.Err()
	}()
	select {
	case err := <-up:
		// The editor closed stdin: finish politely.
		ws.Close(websocket.StatusNormalClosure, "")
		if err != nil {
			return fmt.Errorf("acp: stdin: %w", err)
		}
		return nil
	case err := <-down:
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure || errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("acp: daemon connection: %w", err)
	case <-ctx.Done():
		return nil
	}
}
