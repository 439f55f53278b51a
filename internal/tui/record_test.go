package tui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

var update = flag.Bool("update", false, "record testdata/recorded/*.jsonl again from a real daemon")

// recorder keeps the frames one socket receives, with marks between the steps.
type recorder struct {
	t   *testing.T
	c   *client.Conn
	ctx context.Context
	buf bytes.Buffer
}

func (r *recorder) mark(name string) {
	b, _ := json.Marshal(map[string]string{"type": "__mark", "name": name})
	r.buf.Write(b)
	r.buf.WriteByte('\n')
}

func (r *recorder) send(v any) {
	r.t.Helper()
	if err := r.c.Send(r.ctx, v); err != nil {
		r.t.Fatal(err)
	}
}

// until records frames up to and including the first that matches.
func (r *recorder) until(match func(client.Event) bool) client.Event {
	r.t.Helper()
	for {
		ev, err := r.c.Next(r.ctx)
		if err != nil {
			r.t.Fatalf("recording: %v", err)
		}
		r.buf.Write(ev.Raw)
		r.buf.WriteByte('\n')
		if match(ev) {
			return ev
		}
	}
}

func typ(t string) func(client.Event) bool { return func(e client.Event) bool { return e.Type == t } }

// turnOver matches the turn_status that ends a turn.
func turnOver(e client.Event) bool {
	if e.Type != chat.TypeTurnStatus || e.Seq == 0 {
		return false
	}
	var ts chat.TurnStatus
	_ = e.Decode(&ts)
	return !ts.Active
}

func (r *recorder) save(name string) {
	r.t.Helper()
	dir := filepath.Join("testdata", "recorded")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), r.buf.Bytes(), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// TestRecordFrames records the frame sequences the model tests replay. Run it
// with -update after a change to the protocol; otherwise it is skipped.
func TestRecordFrames(t *testing.T) {
	if !*update {
		t.Skip("recording only with -update")
	}
	d, _ := startDaemon(t)
	server := "http://" + d.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(chatID string, opt client.Options) *recorder {
		opt.Chat, opt.Channel = chatID, "tui"
		c, _, err := client.Dial(ctx, server, d.Token(), opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return &recorder{t: t, c: c, ctx: ctx}
	}
	msg := func(id, text string) map[string]string {
		return map[string]string{"type": "message", "message_id": id, "text": text}
	}

	t.Run("answer", func(t *testing.T) {
		r := dial("rec-answer", client.Options{Since: -1})
		r.until(typ(chat.TypeReplayDone))
		r.mark("connected")
		r.send(msg("m_answer", "say Here is **bold** text."))
		r.until(turnOver)
		r.save("answer")
	})
	t.Run("permission", func(t *testing.T) {
		r := dial("rec-permission", client.Options{Since: -1})
		r.until(typ(chat.TypeReplayDone))
		r.send(msg("m_perm", "permission Bash"))
		ev := r.until(typ(chat.TypePermissionRequest))
		r.mark("card")
		var p chat.PermissionRequest
		_ = ev.Decode(&p)
		r.send(map[string]string{"type": "permission_response", "request_id": p.RequestID, "option_id": "allow"})
		r.until(turnOver)
		r.save("permission")
	})
	t.Run("question", func(t *testing.T) {
		r := dial("rec-question", client.Options{Since: -1})
		r.until(typ(chat.TypeReplayDone))
		r.send(msg("m_q", "question Which color?|red,blue"))
		ev := r.until(typ(chat.TypeQuestion))
		r.mark("card")
		var q chat.Question
		_ = ev.Decode(&q)
		r.send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]string{"Which color?": "green please"}})
		r.until(turnOver)
		r.save("question")
	})
	t.Run("reconnect", func(t *testing.T) {
		// One connection sees a turn; the socket drops; the next connects with a
		// since that overlaps what was already shown (as after a lost frame).
		r := dial("rec-reconnect", client.Options{Since: -1})
		r.until(typ(chat.TypeReplayDone))
		r.send(msg("m_one", "say one"))
		done := r.until(turnOver)
		r.c.CloseNow()
		r.mark("reconnect")
		r2 := dial("rec-reconnect", client.Options{Since: done.Seq - 4, Thread: done.Thread})
		r2.buf = r.buf
		r2.until(typ(chat.TypeReplayDone))
		r2.save("reconnect")
	})
}
