package web

import (
	"html"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/auth"
)

// signInPage is all a visitor without a session sees: a form that POSTs (so
// nothing secret ever sits in a URL the browser keeps), and a note.
func signInPage(note string) string {
	if note != "" {
		note = `<p role="alert"><strong>` + html.EscapeString(note) + `</strong></p>`
	}
	return signInHead + note + `
<p>Open the sign-in link parley printed when it started (it works once, for a few minutes;
<code>parley login-link</code> prints a fresh one), or paste the token that <code>parley token</code> prints.</p>
` + strings.Replace(tokenForm, "required>", "required autofocus>", 1) + `</main></body></html>`
}

// signedOutPage is what a browser whose session ended (revoked from another
// device, or expired) sees instead: a phone has no token to paste, so it says
// what happened and how to pair again; the token form stays, folded away.
const signedOutPage = signInHead + `<p role="alert" data-signed-out><strong>This device was signed out.</strong></p>
<p>Its session was ended from another device (Devices, Revoke) or has expired.</p>
<p>To use it again, pair it: on a device that is signed in to this parley, open <b>Devices</b>,
choose <b>Add a device</b> and scan the QR code with this device's camera (or open the link shown
under it). On the computer that runs parley, <code>parley pair</code> prints such a link too.</p>
<details><summary>Sign in with the token instead</summary>` + tokenForm + `</details></main></body></html>`

const signInHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>parley: sign in</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:15vh auto;padding:0 1rem}
input,button{font:inherit;padding:.5rem;margin:.25rem 0;width:100%;box-sizing:border-box}
@media (prefers-color-scheme:dark){body{background:#111;color:#eee}input{background:#222;color:#eee;border:1px solid #555}}
summary{cursor:pointer;margin:1rem 0 .5rem}</style>
</head><body><main><h1>parley</h1>`

const tokenForm = `<form method="post" action="/login"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form>`

// showSignedOut answers a visitor without a session: one whose browser still
// holds this parley's session cookie was signed in here and has been signed
// out, and is told so; anyone else gets the sign-in page.
func (s *Server) showSignedOut(w http.ResponseWriter, r *http.Request) {
	if _, legacy, ok := s.sessionFrom(r); !ok || legacy {
		s.showSignIn(w, http.StatusUnauthorized, "")
		return
	}
	s.writeSignIn(w, http.StatusUnauthorized, signedOutPage)
}

// oldCookie is the cookie earlier versions set to the raw token; it is cleared.
const oldCookie = "parley_token"

// showSignIn answers a visitor without a session.
func (s *Server) showSignIn(w http.ResponseWriter, status int, note string) {
	s.writeSignIn(w, status, signInPage(note))
}

func (s *Server) writeSignIn(w http.ResponseWriter, status int, page string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// not no-referrer: with it Chromium sends the form's POST with Origin: null.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Connection", "close")
	w.WriteHeader(status)
	io.WriteString(w, page)
}

// handlePage serves the dashboard to a signed-in browser and shows everyone else
// the sign-in page and nothing more. A link carrying the token (?token=, as
// earlier versions printed) is not accepted: it is redirected without the token
// to the sign-in page, so the token does not stay in the address bar.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if c, err := r.Cookie(oldCookie); err == nil && c.Value != "" {
		http.SetCookie(w, &http.Cookie{Name: oldCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	if r.URL.Query().Has("token") {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if publicFiles[r.URL.Path] {
		s.serveUI(w, r)
		return
	}
	if _, _, ok := s.signedIn(r); !ok {
		s.showSignedOut(w, r)
		return
	}
	if id, legacy, ok := s.sessionFrom(r); ok && !strings.HasPrefix(r.URL.Path, "/assets/") {
		s.setSessionCookie(w, r, id) // the browser's copy slides with the server's
		if legacy {
			clearCookie(w, r, CookieName) // moved to this instance's name
		}
	}
	s.serveUI(w, r)
}

// publicFiles are the bundle's files a browser fetches without its cookie (a
// manifest is fetched without credentials) or before signing in: they say
// nothing about this parley.
var publicFiles = map[string]bool{"/manifest.webmanifest": true, "/sw.js": true,
	"/icon.svg": true, "/icon-192.png": true, "/icon-512.png": true}

// setSessionCookie hands the browser its session id: HttpOnly, SameSite=Strict,
// Secure over TLS, for SessionTTL.
func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: s.cookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(auth.SessionTTL / time.Second),
	})
}

// startSession signs the browser in as a device of its own (called name, or
// after its User-Agent) and sends it to the dashboard.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" {
		name = browserName(r.UserAgent())
	}
	id, dev, err := s.opt.Devices.Create(name, auth.KindBrowser)
	if err != nil {
		s.log.Error("could not start a session", "err", err)
		httpError(w, http.StatusInternalServerError, "could not start a session")
		return
	}
	s.log.Info("device signed in", "device", dev.ID, "name", dev.Name, "kind", dev.Kind)
	s.trust(r)
	s.setSessionCookie(w, r, id)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLoginLink spends the one-time code of a printed sign-in link
// (/login?code=…) for a session, then sends the browser to "/", so the address
// bar never shows the code. The code stays in the browser's history as the
// link that was opened, spent: it never signs anyone in again.
func (s *Server) handleLoginLink(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	if code == "" {
		if _, _, ok := s.signedIn(r); ok {
			http.Redirect(w, r, "/", http.StatusSeeOther)
		} else {
			s.showSignIn(w, http.StatusUnauthorized, "")
		}
		return
	}
	if name, ok := s.opt.Devices.UseCode(code); ok {
		s.startSession(w, r, name)
		return
	}
	s.m.authFailures.Inc()
	s.showSignIn(w, http.StatusUnauthorized, "This sign-in link was already used or has expired. Run parley login-link (or parley pair) for a new one, or paste the token.")
}

// maxSignInForm bounds the sign-in form's body, read before any sign-in.
const maxSignInForm = 4096

// handleLoginForm signs in with the token (or a login code) sent by the
// sign-in form's POST.
func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		s.refuse(w)
		httpError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not allowed")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInForm)
	if err := r.ParseForm(); err != nil {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusBadRequest, "the sign-in form could not be read")
		return
	}
	tok, code := r.PostForm.Get("token"), r.PostForm.Get("code")
	if tok != "" && auth.Equal(tok, s.opt.Token) {
		s.startSession(w, r, "")
		return
	}
	if name, ok := s.opt.Devices.UseCode(code); code != "" && ok {
		s.startSession(w, r, name)
		return
	}
	s.m.authFailures.Inc()
	s.showSignIn(w, http.StatusUnauthorized, "Wrong token.")
}

// handleLogout ends the browser's session on the server and clears its cookie.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	id, legacy, ok := s.sessionFrom(r)
	if ok {
		if err := s.opt.Devices.Revoke(id); err != nil {
			s.log.Error("could not revoke a session", "err", err)
			httpError(w, http.StatusInternalServerError, "could not sign out")
			return
		}
		if dev, ok := callerDevice(r.Context()); ok {
			s.log.Info("device signed out", "device", dev.ID, "name", dev.Name, "kind", dev.Kind)
		}
	}
	clearCookie(w, r, s.cookie)
	if legacy {
		clearCookie(w, r, CookieName)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// handleLoginCode makes a one-time sign-in link (`parley login-link`).
func (s *Server) handleLoginCode(w http.ResponseWriter, r *http.Request) {
	me, _ := callerDevice(r.Context())
	code, exp, err := s.opt.Devices.NewCode(me.ID)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": code, "path": LoginPath(code), "expires_at": exp.UTC()})
}

// LoginPath is the path of a sign-in link for code.
func LoginPath(code string) string { return "/login?code=" + url.QueryEscape(code) }

func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	if s.opt.UI == nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>parley</title><p>parley is running; this build has no dashboard.</p>")
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	if st, err := fs.Stat(s.opt.UI, name); err != nil || st.IsDir() {
		name = "index.html" // the dashboard routes in the browser
	}
	if path.Ext(name) == ".webmanifest" {
		w.Header().Set("Content-Type", "application/manifest+json")
	}
	if strings.HasPrefix(name, "assets/") {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Add("Vary", "Accept-Encoding")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		// The bundle ships a .gz beside each asset, made at build time.
		if f, err := s.opt.UI.Open(name + ".gz"); err == nil {
			defer f.Close()
			if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.Header().Set("Content-Encoding", "gzip")
			if rs, ok := f.(io.ReadSeeker); ok {
				http.ServeContent(w, r, name, time.Time{}, rs)
				return
			}
			io.Copy(w, f)
			return
		}
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	http.ServeFileFS(w, r, s.opt.UI, name)
}
