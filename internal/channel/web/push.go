package web

import (
	"encoding/json"
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
)

// Push is what the web channel needs of Web Push (internal/push): the VAPID
// public key, and the devices' subscriptions.
type Push interface {
	// PublicKey is the VAPID public key, URL-safe base64 (applicationServerKey).
	PublicKey() string
	// Subscribe ties a browser's PushSubscription JSON to a device.
	Subscribe(device string, subscription json.RawMessage) error
	// Subscribed reports whether a device has a subscription.
	Subscribed(device string) bool
	// DeviceGone drops a revoked device's subscriptions.
	DeviceGone(device string)
	// Prefs and SetPrefs are a device's optional pushes (a finished turn, an
	// error, a notice); SetPrefs changes only those given (nil: as it is).
	Prefs(device string) push.Prefs
	SetPrefs(device string, turns, errors, notices *bool) (push.Prefs, error)
}

func (s *Server) handlePushKey(w http.ResponseWriter, _ *http.Request) {
	if s.opt.Push == nil {
		httpError(w, http.StatusNotFound, "push is off")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"public_key": s.opt.Push.PublicKey()})
}

// handlePushSubscribe takes a browser's PushSubscription JSON for the device
// that sends it: a push goes to devices, so the shared token cannot subscribe.
func (s *Server) handlePushSubscribe(w http.ResponseWriter, r *http.Request) {
	dev, ok := callerDevice(r.Context())
	switch {
	case s.opt.Push == nil:
		httpError(w, http.StatusNotFound, "push is off")
		return
	case !ok:
		httpError(w, http.StatusBadRequest, "a push subscription belongs to a device: sign in with a link or pair (parley pair), not with the shared token")
		return
	}
	var raw json.RawMessage
	if !s.readBody(w, r, &raw) {
		return
	}
	if err := s.opt.Push.Subscribe(dev.ID, raw); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subscribed": true, "device_id": dev.ID})
}

// handlePushUnsubscribe drops the calling device's subscriptions.
func (s *Server) handlePushUnsubscribe(w http.ResponseWriter, r *http.Request) {
	dev, ok := callerDevice(r.Context())
	if s.opt.Push == nil || !ok {
		httpError(w, http.StatusNotFound, "no subscription")
		return
	}
	s.opt.Push.DeviceGone(dev.ID)
	writeJSON(w, http.StatusOK, map[string]any{"subscribed": false})
}

// handleScreen notes which thread the calling device shows ("" when its page
// is hidden): no push goes to a device about the thread it has on screen.
func (s *Server) handleScreen(w http.ResponseWriter, r *http.Request) {
	dev, ok := callerDevice(r.Context())
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{})
		return
	}
	var body struct {
		Thread chat.ThreadID `json:"thread"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	s.live.show(dev.ID, body.Thread)
	writeJSON(w, http.StatusOK, map[string]any{})
}

// OnScreen reports whether a device shows thread now: it said so and a
// socket or change stream of it is open (a page that went away shows nothing).
func (s *Server) OnScreen(device string, thread chat.ThreadID) bool {
	return s.live.showing(device, thread)
}
