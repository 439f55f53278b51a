package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
	"github.com/parleyhq/parley/internal/trigger"
)

// The schedules' and triggers' API: signed-in only, bad input a 400 with
// words, and a trigger's webhook reached with neither token nor cookie,
// by its signature.
func TestAutorunAPI(t *testing.T) {
	e := startDaemon(t, nil)
	api := client.API{Server: e.url(), Token: e.d.Token()}
	stranger := client.API{Server: e.url()}
	ctx := context.Background()
	var apiErr *client.APIError
	for _, path := range []string{"/api/schedules", "/api/triggers"} {
		if err := stranger.Call(ctx, http.MethodGet, path, nil, &struct{}{}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %v, want 401", path, err)
		}
	}
	for _, c := range []struct {
		sp   any
		want int
	}{
		{schedule.Spec{Agent: "echo", Cwd: e.root, Every: "10s", Text: "x"}, http.StatusBadRequest},
		{schedule.Spec{Agent: "nobody", Cwd: e.root, Every: "1h", Text: "x"}, http.StatusBadRequest},
		{schedule.Spec{Agent: "echo", Cwd: "/", Every: "1h", Text: "x"}, http.StatusForbidden},
		{map[string]any{"agent": "echo", "cwd": e.root, "evry": "1h", "text": "x"}, http.StatusBadRequest},
	} {
		err := api.Call(ctx, http.MethodPost, "/api/schedules", c.sp, &struct{}{})
		if !errors.As(err, &apiErr) || apiErr.Status != c.want || apiErr.Message == "" {
			t.Errorf("add %+v: %v, want %d with words", c.sp, err, c.want)
		}
	}
	var added struct {
		Trigger trigger.Trigger `json:"trigger"`
		Secret  string          `json:"secret"`
	}
	if err := api.Call(ctx, http.MethodPost, "/api/triggers", trigger.Spec{Agent: "echo", Cwd: e.root, Template: "ci {{.x}}"}, &added); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"x":"red"}`)
	post := func(sig string) int {
		req, _ := http.NewRequest(http.MethodPost, e.url()+added.Trigger.Path, bytes.NewReader(body))
		req.Header.Set(trigger.SignatureHeader, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(trigger.Sign("wrong", body)); got != http.StatusUnauthorized {
		t.Errorf("a wrong signature: %d", got)
	}
	if got := post(trigger.Sign(added.Secret, body)); got != http.StatusAccepted {
		t.Errorf("signed, without token or cookie: %d", got)
	}
	var list struct {
		Triggers []map[string]any `json:"triggers"`
	}
	if err := api.Call(ctx, http.MethodGet, "/api/triggers", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Triggers) != 1 || list.Triggers[0]["secret"] != nil || list.Triggers[0]["last_thread"] == nil {
		t.Errorf("listed: %+v, want the trigger's run and never its secret", list.Triggers)
	}
}

// A trigger's turn, like a person's, pushes its end to the devices that
// turned "finished turns" on, and to those only.
func TestTriggerTurnPushesToFinishedTurnsDevices(t *testing.T) {
	e := startDaemon(t, nil)
	svc := e.pushService()
	phoneID, phoneTok := e.pair("phone")
	_, tabletTok := e.pair("tablet")
	phone := e.subscribe(svc, phoneTok)
	tablet := e.subscribe(svc, tabletTok)
	if st := e.call("PATCH", "/api/devices/"+phoneID, phoneTok, map[string]bool{"push_turns": true}, nil); st != 200 {
		t.Fatalf("turning the phone's turn pushes on: %d", st)
	}
	var added struct {
		Trigger trigger.Trigger `json:"trigger"`
		Secret  string          `json:"secret"`
	}
	if st := e.call("POST", "/api/triggers", e.d.Token(), trigger.Spec{Agent: "echo", Cwd: e.root, Template: "say {{.x}}"}, &added); st != 200 {
		t.Fatalf("add a trigger: %d", st)
	}
	body := []byte(`{"x":"built"}`)
	req, _ := http.NewRequest(http.MethodPost, e.url()+added.Trigger.Path, bytes.NewReader(body))
	req.Header.Set(trigger.SignatureHeader, trigger.Sign(added.Secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ran struct {
		Thread string `json:"thread"`
	}
	json.NewDecoder(resp.Body).Decode(&ran)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || ran.Thread == "" {
		t.Fatalf("the webhook: %d %+v", resp.StatusCode, ran)
	}
	ps := svc.WaitFor(t, 10*time.Second, "the phone's turn push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "turn" })
	m := webpushsvc.Messages[push.Message](ps, phone)[0]
	if m.Body != "finished its turn" || m.URL != "/#/t/"+ran.Thread {
		t.Fatalf("the phone would show %+v", m)
	}
	if k := kinds(ps, tablet); k != "" {
		t.Fatalf("the tablet, with finished turns off, got %q", k)
	}
}
