package web

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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

// Join throttling. A classroom code has 31^6 values and a presenter token
// 256 bits, but nothing stopped one machine from trying thousands of codes
// (the review sent 2,000 wrong codes and 300 wrong tokens). Each client
// address may fail joinBurst times, then one more time every joinEvery;
// past that it gets 429 Too Many Requests with Retry-After, on the join and
// presenter pages, the classroom API and the WebSocket. Right codes never
// count, so a class of 64 behind one address joins freely.
const (
	joinBurst = 20
	joinEvery = 3 * time.Second
)

type joinGuard struct {
	mu sync.Mutex
	m  map[string]*joinBucket
}

type joinBucket struct {
	tokens float64
	last   time.Time
}

func (b *joinBucket) refill(now time.Time) {
	b.tokens = min(joinBurst, b.tokens+now.Sub(b.last).Seconds()/joinEvery.Seconds())
	b.last = now
}

// clientAddr is the request's client address (the peer's; no forwarding
// header is trusted).
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// wait is how long addr must wait before its next attempt (0: now).
func (g *joinGuard) wait(addr string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.m[addr]
	if b == nil {
		return 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(joinEvery))
}

// failed counts a wrong code or token from addr.
func (g *joinGuard) failed(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*joinBucket{}
	}
	b := g.m[addr]
	if b == nil {
		if len(g.m) >= 10_000 { // forget addresses that have waited enough
			for a, o := range g.m {
				if o.refill(now); o.tokens >= joinBurst {
					delete(g.m, a)
				}
			}
		}
		b = &joinBucket{tokens: joinBurst, last: now}
		g.m[addr] = b
	}
	b.refill(now)
	b.tokens = max(b.tokens-1, 0)
}

// joinThrottled answers 429 with Retry-After when r's address has failed
// too often, and reports whether it did.
func (srv *Server) joinThrottled(w http.ResponseWriter, r *http.Request) bool {
	d := srv.joins.wait(clientAddr(r), time.Now())
	if d <= 0 {
		return false
	}
	secs := int(math.Ceil(d.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, fmt.Sprintf("too many wrong classroom codes or presenter tokens from this address; wait %d seconds, then check the code on the projector (or use the presenter URL printed when the classroom was created)", secs), http.StatusTooManyRequests)
	return true
}

// joinFailed counts a wrong code or token from r's address.
func (srv *Server) joinFailed(r *http.Request) { srv.joins.failed(clientAddr(r), time.Now()) }
