package web

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Cross-site request checks. A browser tells the server where a request
// comes from in two headers:
//
//   - Sec-Fetch-Site (every current browser): "same-origin", "same-site",
//     "cross-site" or "none" (the user typed the URL or used a bookmark).
//     Only the browser can set it; a page's script cannot.
//   - Origin: the requesting page's scheme://host[:port], or "null" when
//     the browser hides it. StateLab's pages send Referrer-Policy:
//     no-referrer (a presenter URL carries its token), and with that policy
//     Chromium sends Origin: null on the app's own form POST.
//
// A request passes when it comes from the server's own origin (scheme, host
// and port), from an origin allowed with --allow-origin, or from no browser
// page at all (no Origin, no Sec-Fetch-Site: curl, scripts, the CLI). An
// Origin of "null" passes only when the browser also says the request is
// same-origin. Everything a browser marks cross-site is refused, whatever
// its Origin says.

// requestScheme is the scheme the request came with.
func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// checkOrigin reports whether r may act on the server: open a WebSocket,
// create a classroom or session, start a replay, attach, run a bench.
func (srv *Server) checkOrigin(r *http.Request) bool {
	site := strings.ToLower(r.Header.Get("Sec-Fetch-Site"))
	origin := r.Header.Get("Origin")
	if site == "cross-site" {
		return srv.allowedOrigin(origin)
	}
	switch origin {
	case "":
		// No Origin: not a page's cross-site request (browsers send Origin on
		// every cross-site POST and WebSocket handshake).
		return site == "" || site == "same-origin" || site == "none"
	case "null":
		return site == "same-origin"
	}
	return srv.ownOrigin(r, origin) || srv.allowedOrigin(origin)
}

// ownOrigin reports whether origin is the request's own scheme://host[:port].
func (srv *Server) ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, requestScheme(r)) && strings.EqualFold(u.Host, r.Host)
}

// allowedOrigin reports whether origin is one of Config.AllowOrigins.
func (srv *Server) allowedOrigin(origin string) bool {
	if origin == "" || origin == "null" {
		return false
	}
	return slices.ContainsFunc(srv.cfg.AllowOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimRight(o, "/"), strings.TrimRight(origin, "/"))
	})
}

// Host allowlist (DNS rebinding). A page on attacker.example can make its
// name resolve to 127.0.0.1 after it loaded; the browser then sends the
// page's requests to StateLab with Host: attacker.example and a matching
// Origin, so the Origin check alone passes them. The server therefore
// answers only requests whose Host names it: localhost, 127.0.0.1 and [::1]
// always, the hosts of Config.AllowHosts (the names and LAN addresses
// statelab serve listens on), of Config.PublicURL and of
// Config.AllowOrigins. Pages, the API and the WebSocket are all behind it.

// loopbackHosts are always answered.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// hostOnly returns host without its port and brackets, in lower case.
func hostOnly(hostport string) string {
	h := hostport
	if sh, _, err := net.SplitHostPort(hostport); err == nil {
		h = sh
	}
	return strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
}

// allowedHosts returns the host names the server answers.
func (c *Config) allowedHosts() map[string]bool {
	m := map[string]bool{}
	for _, h := range loopbackHosts {
		m[h] = true
	}
	for _, h := range c.AllowHosts {
		if h = hostOnly(strings.TrimSpace(h)); h != "" {
			m[h] = true
		}
	}
	for _, o := range append([]string{c.PublicURL}, c.AllowOrigins...) {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			m[hostOnly(u.Host)] = true
		}
	}
	return m
}

// checkHost refuses a request whose Host the server does not answer.
func (srv *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "" && !srv.hosts.Load().m[hostOnly(r.Host)] {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "StateLab does not answer requests for host %q: only localhost, 127.0.0.1, [::1] and the addresses it was started with "+
				"(a web page may be trying to reach it through DNS rebinding). Open it at one of those addresses, "+
				"or start it with --allow-origin http://%s to allow this name.\n", hostOnly(r.Host), r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostSet is the allowlist, replaced whole when SetPublicURL adds a host.
type hostSet struct{ m map[string]bool }
