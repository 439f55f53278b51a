package notifysvc

import (
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// A client on the shade's bus (as Chromium is) shows a notification, sees it
// tapped, and closes it.
func TestShadeShowsTapsAndCloses(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c, err := dbus.Connect(strings.TrimPrefix(s.Env(), "DBUS_SESSION_BUS_ADDRESS="))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AddMatchSignal(dbus.WithMatchInterface(iface)); err != nil {
		t.Fatal(err)
	}
	sig := make(chan *dbus.Signal, 4)
	c.Signal(sig)
	obj := c.Object(iface, path)
	var id uint32
	if err := obj.Call(iface+".Notify", 0, "app", uint32(0), "", "title", "body", []string{"default", "Activate"},
		map[string]dbus.Variant{}, int32(-1)).Store(&id); err != nil {
		t.Fatal(err)
	}
	ns := s.WaitFor(t, 5*time.Second, "the notification", func(ns []Note) bool { return len(ns) == 1 })
	if ns[0].Summary != "title" || ns[0].ID != id {
		t.Fatalf("%+v", ns)
	}
	s.Click(t, id)
	select {
	case m := <-sig:
		if m.Name != iface+".ActionInvoked" || m.Body[0].(uint32) != id || m.Body[1].(string) != "default" {
			t.Fatalf("%+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no ActionInvoked")
	}
	if err := obj.Call(iface+".CloseNotification", 0, id).Err; err != nil {
		t.Fatal(err)
	}
	s.WaitFor(t, 5*time.Second, "closed", func(ns []Note) bool { return ns[0].Closed })
}
