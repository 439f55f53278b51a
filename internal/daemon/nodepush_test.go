package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scripted"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// A turn that ends on node b pushes to the phone paired with the hub that
// turned turn pushes on, once ("echo on b: finished its turn", b's thread at
// the hub), and to no device that did not: the hub and b as two daemons
// linked over real NATS, the Web Push stand-in at the hub.
func TestANodesFinishedTurnPushesToTheHubsPhone(t *testing.T) {
	t.Parallel()
	hub := startDaemon(t, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Listen = "hub", "127.0.0.1:0"
	})
	addr := hub.d.ClusterHub().Addr()
	b := startWith(t, &scripted.Driver{}, joinedAs(t, "b", hub.cfg.DataDir, addr))
	testkit.Eventually(t, 10*time.Second, func() bool {
		nodes, err := hub.d.ClusterHub().Nodes(context.Background())
		return err == nil && len(nodes) == 1 && nodes[0].Online
	}, "b online at the hub")

	svc := hub.pushService()
	phoneID, phoneTok := hub.pair("phone")
	_, tabletTok := hub.pair("tablet")
	phone := hub.subscribe(svc, phoneTok)
	tablet := hub.subscribe(svc, tabletTok)
	if st := hub.call("PATCH", "/api/devices/"+phoneID, phoneTok, map[string]bool{"push_turns": true}, nil); st != 200 {
		t.Fatalf("turning the phone's turn pushes on: %d", st)
	}

	s := chatsock.Dial(t, hub.url(), hub.d.Token(), client.Options{Chat: "desk", Since: -1})
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": b.root, "node": "b"}}})
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b's turn at the hub")
	ps := svc.WaitFor(t, 10*time.Second, "the phone's turn push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "turn" })
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Title != "echo on b" || m.Body != "finished its turn" || !strings.HasSuffix(m.Thread, "@b") || m.Tag != push.ThreadTag(chat.ThreadID(m.Thread)) {
		t.Fatalf("the phone would show %+v", m)
	}
	// A card b opens next reaches both devices: by then the tablet, which
	// turned nothing on, had no turn push.
	s.Send(chatsock.Msg("m2", "permission Bash"))
	ps = svc.WaitFor(t, 10*time.Second, "the card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, tablet) != "" })
	if k := kinds(ps, tablet); k != "open" {
		t.Fatalf("the tablet got %q", k)
	}
}
