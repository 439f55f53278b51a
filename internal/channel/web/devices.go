package web

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
)

// ReasonRevoked is the close reason a revoked device's sockets get.
const ReasonRevoked = "this device was signed out (revoked)"

// errRevoked is the cause that ends a revoked device's requests.
var errRevoked = errors.New(ReasonRevoked)

type deviceKey struct{}

// callerDevice is the device a request came from; ok is false for the shared
// token (the CLI and scripts).
func callerDevice(ctx context.Context) (auth.Device, bool) {
	d, ok := ctx.Value(deviceKey{}).(auth.Device)
	return d, ok
}

// live tracks the requests in flight per device (sockets, change streams), so
// revoking a device ends them at once. Its mutex guards only its map and is
// never held while calling out: a leaf (docs/locks.md).
type live struct {
	mu     sync.Mutex
	reqs   map[string]map[*context.CancelCauseFunc]struct{} // device id → cancels
	screen map[string]chat.ThreadID                         // device id → the thread its page shows
}

// show notes the thread a device's page shows ("" for none).
func (l *live) show(device string, thread chat.ThreadID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.screen == nil {
		l.screen = map[string]chat.ThreadID{}
	}
	if thread == "" {
		delete(l.screen, device)
	} else {
		l.screen[device] = thread
	}
}

// showing reports whether a device shows thread and has a request open.
func (l *live) showing(device string, thread chat.ThreadID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return thread != "" && l.screen[device] == thread && len(l.reqs[device]) > 0
}

// track gives a device's request a context that revocation cancels with
// errRevoked; done forgets it.
func (l *live) track(ctx context.Context, device string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	if l.reqs == nil {
		l.reqs = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if l.reqs[device] == nil {
		l.reqs[device] = map[*context.CancelCauseFunc]struct{}{}
	}
	l.reqs[device][&cancel] = struct{}{}
	l.mu.Unlock()
	return ctx, func() {
		l.mu.Lock()
		delete(l.reqs[device], &cancel)
		if len(l.reqs[device]) == 0 {
			delete(l.reqs, device)
		}
		l.mu.Unlock()
		cancel(nil)
	}
}

// end cancels every request of a device with errRevoked.
func (l *live) end(device string) {
	l.mu.Lock()
	cancels := l.reqs[device]
	delete(l.reqs, device)
	delete(l.screen, device)
	l.mu.Unlock()
	for c := range cancels {
		(*c)(errRevoked)
	}
}

// revoked reports whether ctx ended because its device was revoked.
func revoked(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errRevoked) }

// deviceView is a device as GET /api/devices lists it.
type deviceView struct {
	auth.Device
	Push bool `json:"push"`
	// PushTurns, PushErrors and PushNotices are its optional pushes: a
	// finished turn, an error, a notice.
	PushTurns   bool `json:"push_turns"`
	PushErrors  bool `json:"push_errors"`
	PushNotices bool `json:"push_notices"`
	Current     bool `json:"current,omitempty"`
}

func (s *Server) viewDevice(d auth.Device, me string) deviceView {
	v := deviceView{Device: d, Current: d.ID == me}
	if s.opt.Push != nil {
		v.Push = s.opt.Push.Subscribed(d.ID)
		p := s.opt.Push.Prefs(d.ID)
		v.PushTurns, v.PushErrors, v.PushNotices = p.Turns, p.Errors, p.Notices
	}
	return v
}

func (s *Server) handleDevices(w http.ResponseWriter, r *http.Request) {
	me, _ := callerDevice(r.Context())
	ds := s.opt.Devices.List()
	out := make([]deviceView, 0, len(ds))
	for _, d := range ds {
		out = append(out, s.viewDevice(d, me.ID))
	}
	writeJSON(w, http.StatusOK, map[string]any{"devices": out})
}

// handleRevokeDevice ends a device at once: its session stops working, its
// open sockets close with ReasonRevoked, its push subscriptions are dropped.
func (s *Server) handleRevokeDevice(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	found, err := s.opt.Devices.RevokeDevice(id)
	if !found {
		httpError(w, http.StatusNotFound, "no device "+id)
		return
	}
	// Ended in memory even when the file could not be written: it is cut off
	// now, and the person is told it would come back after a restart.
	s.live.end(id)
	if s.opt.Push != nil {
		s.opt.Push.DeviceGone(id)
	}
	if err != nil {
		s.log.Error("could not save a revocation", "device", id, "err", err)
		httpError(w, http.StatusInternalServerError, "device "+id+" is cut off until parley restarts, but the revocation could not be saved (it would be signed in again after a restart): "+err.Error())
		return
	}
	s.log.Info("device revoked", "device", id)
	writeJSON(w, http.StatusOK, map[string]any{"revoked": true})
}

// handleDevicePrefs turns a device's optional pushes on or off: PATCH
// /api/devices/{id} {"push_turns": bool, "push_errors": bool, "push_notices": bool}, any left out
// staying as it is. It answers the device as GET /api/devices lists it.
func (s *Server) handleDevicePrefs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var dev auth.Device
	found := false
	for _, d := range s.opt.Devices.List() {
		if d.ID == id {
			dev, found = d, true
		}
	}
	switch {
	case s.opt.Push == nil:
		httpError(w, http.StatusNotFound, "push is off")
		return
	case !found:
		httpError(w, http.StatusNotFound, "no device "+id)
		return
	}
	var body struct {
		Turns   *bool `json:"push_turns"`
		Errors  *bool `json:"push_errors"`
		Notices *bool `json:"push_notices"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	// Only what the body names changes: another screen may be changing the
	// other one at the same moment.
	if _, err := s.opt.Push.SetPrefs(id, body.Turns, body.Errors, body.Notices); err != nil {
		s.log.Error("could not save a device's pushes", "device", id, "err", err)
		httpError(w, http.StatusInternalServerError, "the device's pushes could not be saved: "+err.Error())
		return
	}
	me, _ := callerDevice(r.Context())
	writeJSON(w, http.StatusOK, s.viewDevice(dev, me.ID))
}

// handlePairCode makes a one-time pairing link for a new device (`parley pair`
// and the dashboard's "Add a device"), with its QR code as a PNG data URL.
func (s *Server) handlePairCode(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 && !s.readBody(w, r, &body) {
		return
	}
	me, _ := callerDevice(r.Context())
	code, exp, err := s.opt.Devices.NewPairCode(me.ID, body.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	link := s.baseURL(r) + LoginPath(code)
	png, err := qrcode.Encode(link, qrcode.Medium, 320)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": code, "path": LoginPath(code), "url": link,
		"expires_at": exp.UTC(), "qr_png": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)})
}

// baseURL is the address a device elsewhere reaches this parley at: the
// configured one, else the one this request came to.
func (s *Server) baseURL(r *http.Request) string {
	if s.opt.BaseURL != nil {
		if u := s.opt.BaseURL(); u != "" {
			return strings.TrimRight(u, "/")
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// maxPairBody bounds POST /api/pair's body, read before any sign-in.
const maxPairBody = 4096

// handlePair spends a pairing (or login) code for a program's own device and
// token: POST /api/pair {"code","name"} → {"device_id","token"}. The code is
// the credential, so the request needs no other.
func (s *Server) handlePair(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		s.refuse(w)
		httpError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not allowed")
		return
	}
	var body struct {
		Code string `json:"code"`
		Name string `json:"name"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPairBody)
	if !s.readBody(w, r, &body) {
		return
	}
	name, ok := s.opt.Devices.UseCode(body.Code)
	if !ok {
		s.refuse(w)
		httpError(w, http.StatusUnauthorized, "the pairing code was already used or has expired: run parley pair for a new one")
		return
	}
	if n := auth.CleanName(body.Name); n != "" {
		name = n
	}
	token, dev, err := s.opt.Devices.Create(name, auth.KindProgram)
	if err != nil {
		s.log.Error("could not pair a device", "err", err)
		httpError(w, http.StatusInternalServerError, "could not pair the device")
		return
	}
	s.trust(r)
	s.log.Info("device paired", "device", dev.ID, "name", dev.Name, "kind", dev.Kind)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"device_id": dev.ID, "token": token, "name": dev.Name})
}

// browserName names a browser's device from its User-Agent, roughly: enough to
// tell a phone from a laptop in the device list.
func browserName(ua string) string {
	browser := "Browser"
	for _, b := range []struct{ key, name string }{{"Edg/", "Edge"}, {"Firefox/", "Firefox"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}} {
		if strings.Contains(ua, b.key) {
			browser = b.name
			break
		}
	}
	for _, o := range []struct{ key, name string }{{"Android", "Android"}, {"iPhone", "iPhone"}, {"iPad", "iPad"}, {"Mac OS X", "macOS"}, {"Windows", "Windows"}, {"Linux", "Linux"}} {
		if strings.Contains(ua, o.key) {
			return browser + " on " + o.name
		}
	}
	return browser
}
