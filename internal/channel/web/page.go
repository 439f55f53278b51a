package web

import (
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/auth"
)

// loginPage is all a visitor without the token sees.
const loginPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>parley: sign in</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:15vh auto;padding:0 1rem}
input,button{font:inherit;padding:.5rem;margin:.25rem 0;width:100%;box-sizing:border-box}
@media (prefers-color-scheme:dark){body{background:#111;color:#eee}input{background:#222;color:#eee;border:1px solid #555}}</style>
</head><body><main><h1>parley</h1>
<p>Paste the token that <code>parley token</code> prints, or open the link parley printed when it started.</p>
<form method="get" action="/"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button></form></main></body></html>`

// handlePage serves the dashboard to a signed-in browser, turns a ?token= link into
// a cookie, and shows everyone else the sign-in page and nothing more.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	q := r.URL.Query()
	if tok := q.Get("token"); tok != "" {
		if !auth.Equal(tok, s.opt.Token) {
			s.m.authFailures.Inc()
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, loginPage)
			return
		}
		http.SetCookie(w, &http.Cookie{
			Name: CookieName, Value: tok, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 400 * 24 * 3600,
		})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if !auth.Equal(presentedToken(r, false), s.opt.Token) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, loginPage)
		return
	}
	s.serveUI(w, r)
}

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
