// Package notifysvc is a desktop notification server stand-in, for tests: the
// phone's notification shade. It runs a private D-Bus session bus (the real
// dbus-daemon) and owns org.freedesktop.Notifications on it, as a desktop's
// notification daemon does. Chromium on Linux shows a service worker's
// notifications there (Notify) when DBUS_SESSION_BUS_ADDRESS names that bus,
// and a Click is what a person's tap sends back (ActionInvoked "default"):
// Chromium then fires the worker's real notificationclick, with the user
// activation a tap carries. Nothing of parley runs here.
package notifysvc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	path  = dbus.ObjectPath("/org/freedesktop/Notifications")
	iface = "org.freedesktop.Notifications"
)

// Note is one notification as the browser sent it.
type Note struct {
	ID      uint32
	App     string
	Summary string // the notification's title
	Body    string // Chromium puts the origin, a blank line, then the body
	Actions []string
	Closed  bool // the browser took it away (CloseNotification)
}

// Service is the stand-in.
type Service struct {
	addr string
	conn *dbus.Conn

	mu     sync.Mutex
	notes  []Note
	notify chan struct{}
}

// Start runs the bus and the server until the test ends; without dbus-daemon
// the test is skipped.
func Start(t testing.TB) *Service {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("a notification shade needs dbus-daemon (apt-get install -y dbus-daemon)")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=`+sock+`</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// It prints its address once it listens.
	line := make([]byte, 512)
	if n, err := out.Read(line); err != nil || n == 0 {
		t.Fatalf("dbus-daemon printed no address: %v %s", err, stderr.String())
	}
	s := &Service{addr: "unix:path=" + sock, notify: make(chan struct{}, 1)}
	if s.conn, err = dbus.Connect(s.addr); err != nil {
		t.Fatalf("notifysvc: %v", err)
	}
	t.Cleanup(func() { s.conn.Close() })
	if err := s.conn.Export(server{s}, path, iface); err != nil {
		t.Fatal(err)
	}
	if r, err := s.conn.RequestName(iface, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("notifysvc: owning %s: %v %v", iface, r, err)
	}
	return s
}

// Env is the variable that points a browser at this shade.
func (s *Service) Env() string { return "DBUS_SESSION_BUS_ADDRESS=" + s.addr }

// Notes returns the notifications so far, in order.
func (s *Service) Notes() []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Note(nil), s.notes...)
}

// WaitFor waits until match holds for the notifications so far, or fails the test.
func (s *Service) WaitFor(t testing.TB, within time.Duration, what string, match func([]Note) bool) []Note {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		ns := s.Notes()
		if match(ns) {
			return ns
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("notifysvc: %s: not within %v; notifications: %+v", what, within, ns)
		}
	}
}

// Click taps a notification: its default action, as a person's tap invokes it.
func (s *Service) Click(t testing.TB, id uint32) {
	t.Helper()
	if err := s.conn.Emit(path, iface+".ActionInvoked", id, "default"); err != nil {
		t.Fatalf("notifysvc: tap %d: %v", id, err)
	}
}

func (s *Service) changed() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// server is the org.freedesktop.Notifications interface (version 1.2).
type server struct{ s *Service }

func (server) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body", "persistence"}, nil
}

func (server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "notifysvc", "parley tests", "1", "1.2", nil
}

func (v server) Notify(app string, replaces uint32, _ string, summary, body string, actions []string,
	_ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	if replaces != 0 {
		for i := range s.notes {
			if s.notes[i].ID == replaces {
				s.notes[i] = Note{ID: replaces, App: app, Summary: summary, Body: body, Actions: actions}
				return replaces, nil
			}
		}
	}
	id := uint32(len(s.notes) + 1)
	s.notes = append(s.notes, Note{ID: id, App: app, Summary: summary, Body: body, Actions: actions})
	return id, nil
}

func (v server) CloseNotification(id uint32) *dbus.Error {
	s := v.s
	s.mu.Lock()
	found := false
	for i := range s.notes {
		if s.notes[i].ID == id {
			s.notes[i].Closed, found = true, true
		}
	}
	s.mu.Unlock()
	s.changed()
	if !found {
		return dbus.MakeFailedError(fmt.Errorf("no notification %d", id))
	}
	// Reason 3: closed by a call to CloseNotification.
	if err := s.conn.Emit(path, iface+".NotificationClosed", id, uint32(3)); err != nil {
		return dbus.MakeFailedError(err)
	}
	return nil
}
