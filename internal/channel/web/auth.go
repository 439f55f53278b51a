// The checks every API call passes: the token or a signed-in device, and the Origin.

package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/parleyhq/parley/internal/auth"
)

// signedIn reports whether r shows the token (Authorization: Bearer, or for the
// chat socket ?token=), a device's token the same ways, or a device's live
// session cookie; a signed-in request's connection is trusted from then on
// (conns.go). dev is the device (ok with isDev false for the shared token).
func (s *Server) signedIn(r *http.Request) (dev auth.Device, isDev, ok bool) {
	secret, cookie := "", false
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		secret = strings.TrimPrefix(h, "Bearer ")
	} else if id, _, ok := s.sessionFrom(r); ok {
		secret, cookie = id, true
	} else if r.URL.Path == "/ws/chat" {
		secret = r.URL.Query().Get("token")
	}
	if !cookie && auth.Equal(secret, s.opt.Token) {
		ok = true
	} else if dev, isDev = s.opt.Devices.Lookup(secret); isDev {
		ok = true
	}
	if ok {
		s.trust(r)
	}
	return dev, isDev, ok
}

// authed requires the token or a device and, for browser requests, our own
// origin. A device's request carries the device in its context and ends when
// the device is revoked.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dev, isDev, ok := s.signedIn(r)
		if !ok {
			s.refuse(w)
			httpError(w, http.StatusUnauthorized, "missing or wrong token")
			return
		}
		if !s.originAllowed(r) {
			httpError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not allowed")
			return
		}
		if isDev {
			ctx, done := s.live.track(context.WithValue(r.Context(), deviceKey{}, dev), dev.ID)
			defer done()
			// Revoked between the lookup and track: live.end ran before this
			// request was there to cancel.
			if !s.opt.Devices.Live(dev.ID) {
				s.refuse(w)
				httpError(w, http.StatusUnauthorized, "missing or wrong token")
				return
			}
			r = r.WithContext(ctx)
		}
		h(w, r)
	})
}

// refuse prepares a 401: the connection closes after it, so net/http answers at
// once instead of first reading (up to 256 kB of) a body nobody will use, and a
// stranger's connection is not kept.
func (s *Server) refuse(w http.ResponseWriter) {
	s.m.authFailures.Inc()
	w.Header().Set("Connection", "close")
}

// originAllowed accepts requests without Origin (non-browsers), from the server's
// own origin, and from configured ones.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, a := range s.opt.AllowedOrigins {
		if strings.EqualFold(strings.TrimRight(a, "/"), o) {
			return true
		}
	}
	return false
}
