package attach

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
)

// Guards against server-side request forgery. StateLab's server reads a
// JobManager's REST API on a learner's behalf (the attach page), so an
// address a learner types must not make it read what only the server can
// reach: cloud metadata services (which hand out credentials) and other
// link-local services, or a different host through a redirect. The checks
// run on the address actually dialled, after name resolution, so a name
// that resolves to a metadata address is refused as well. Loopback and
// private LAN addresses stay allowed: that is where a learner's Flink runs.

// ErrForbiddenAddress: the address is one StateLab never reads.
var ErrForbiddenAddress = errors.New("attach: address refused")

// metadataAddrs are cloud metadata and platform services outside the
// link-local ranges (those are refused whole).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud metadata
	netip.MustParseAddr("168.63.129.16"),   // Azure platform (WireServer)
	netip.MustParseAddr("fd00:ec2::254"),   // AWS metadata over IPv6
}

// ForbiddenAddressError names the refused address.
type ForbiddenAddressError struct {
	Address string
	Why     string
}

func (e *ForbiddenAddressError) Error() string {
	return fmt.Sprintf("StateLab never reads %s (%s); give the JobManager's REST address, e.g. http://localhost:%d or the Flink machine's LAN address", e.Address, e.Why, DefaultRESTPort)
}

func (e *ForbiddenAddressError) Unwrap() error { return ErrForbiddenAddress }

// CheckAddress refuses an IP address StateLab never reads: link-local
// (169.254.0.0/16, fe80::/10, where cloud metadata services live), cloud
// metadata addresses, unspecified, multicast and broadcast addresses.
func CheckAddress(ip netip.Addr) error {
	ip = ip.Unmap()
	why := ""
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		why = "a link-local address, where cloud metadata services answer"
	case ip.IsUnspecified():
		why = "an unspecified address"
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		why = "a multicast or broadcast address"
	default:
		for _, m := range metadataAddrs {
			if ip == m {
				why = "a cloud metadata address"
			}
		}
	}
	if why == "" {
		return nil
	}
	return &ForbiddenAddressError{Address: ip.String(), Why: why}
}

// dialControl is a net.Dialer Control that applies CheckAddress to every
// address dialled.
func dialControl(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return fmt.Errorf("attach: dialled address %q is not an IP address", address)
	}
	return CheckAddress(ip)
}

// GuardDialer makes d refuse the addresses CheckAddress refuses; it returns d.
func GuardDialer(d *net.Dialer) *net.Dialer {
	d.Control = dialControl
	return d
}

// SameOriginRedirects is an http.Client CheckRedirect that follows at most
// three redirects, each to the same scheme, host and port as the first
// request: a JobManager behind a proxy may redirect within itself, never to
// another server.
func SameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("stopped after 3 redirects")
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
		return fmt.Errorf("refused a redirect from %s://%s to %s://%s: only redirects within the same scheme, host and port are followed; give the address the redirect points to, if it is the JobManager",
			first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}
