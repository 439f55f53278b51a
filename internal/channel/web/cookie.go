// The session cookie's name, one per parley: cookies belong to a host, not to
// a port, so two parleys on one host (a hub and a node, two data dirs) that
// shared one name would each overwrite the other's cookie and sign the
// browser out of it.

package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// CookieName is the cookie versions before per-instance names set. It is still
// read (a browser signed in before the upgrade stays signed in, and its
// cookie is moved to this instance's name on its next page load).
const CookieName = "parley_session"

// SessionCookie is the session cookie's name for the parley whose token is
// token: the token is what tells one parley's data directory from another's.
// The name holds 40 bits of a salted hash, which says nothing of the token.
func SessionCookie(token string) string {
	sum := sha256.Sum256([]byte("parley session cookie\x00" + token))
	return CookieName + "_" + hex.EncodeToString(sum[:5])
}

// sessionFrom is the session id r's cookie holds: this instance's cookie, else
// the one earlier versions set (legacy true).
func (s *Server) sessionFrom(r *http.Request) (id string, legacy, ok bool) {
	if c, err := r.Cookie(s.cookie); err == nil && c.Value != "" {
		return c.Value, false, true
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		return c.Value, true, true
	}
	return "", false, false
}

// clearCookie tells the browser to drop the cookie called name.
func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}
