package web

import (
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
