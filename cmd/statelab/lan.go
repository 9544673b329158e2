package main

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/statelab/statelab/web"
)

// lanURL is the address other machines reach the server at, or "" when it
// listens on loopback only (the default): for a wildcard address the first
// private IPv4 address of this machine's interfaces, else the address given.
func lanURL(addr net.Addr, ifaceAddrs func() ([]net.Addr, error)) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return ""
	case ip.IsLoopback():
		return ""
	case !ip.IsUnspecified():
		return "http://" + net.JoinHostPort(host, port)
	}
	addrs, err := ifaceAddrs()
	if err != nil {
		return ""
	}
	var fallback string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil || n.IP.IsLinkLocalUnicast() {
			continue
		}
		u := "http://" + net.JoinHostPort(n.IP.String(), port)
		if n.IP.IsPrivate() {
			return u
		}
		if fallback == "" {
			fallback = u
		}
	}
	return fallback
}

// startClassroom creates a classroom at start-up and prints what the
// presenter needs: the presenter URL (with its token) and the join URL.
func startClassroom(srv *web.Server, template, base string, out io.Writer) error {
	info, err := srv.CreateClassroom(web.ClassroomRequest{Template: template}, base)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Classroom %s (%s) is open.\n", info.Code, template)
	fmt.Fprintf(out, "  Presenter (keep this link to yourself): %s\n", info.PresenterURL)
	fmt.Fprintf(out, "  Presenter token: %s\n", info.PresenterToken)
	fmt.Fprintf(out, "  Students join at: %s  (code %s)\n", info.JoinURL, info.Code)
	if strings.Contains(base, "127.0.0.1") || strings.Contains(base, "localhost") {
		fmt.Fprintln(out, "  This server listens on this computer only; students need --listen 0.0.0.0:8080 to reach it.")
	}
	return nil
}
