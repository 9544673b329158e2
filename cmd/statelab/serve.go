package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/statelab/statelab/web"
)

func init() {
	register(command{name: "serve", summary: "run the web app: lessons, sandbox, live views (the default command)", run: runServe})
	// `go run ./cmd/statelab` opens the app.
	defaultCommand = "serve"
}

func runServe(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("serve")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (host:port); only loopback unless you choose otherwise")
	fs.StringVar(addr, "listen", "127.0.0.1:8080", "the same as --addr; --listen 0.0.0.0:8080 serves the local network (a classroom) and prints the LAN URL")
	classroom := fs.String("classroom", "", "open a classroom running this template (wordcount, clicks, article) at start and print its presenter and join URLs")
	maxFollowers := fs.Int("max-followers", 250, "most followers of one classroom")
	maxClassrooms := fs.Int("max-classrooms", 8, "most classrooms running at once")
	data := fs.String("data", "", "directory for session data: Pebble working directories and checkpoints (default: the user's cache directory/statelab)")
	origins := fs.String("allow-origin", "", "comma-separated extra origins (scheme://host[:port]) whose pages may use the app and whose host names it answers, e.g. http://teacher-laptop.local:8080 (the app answers only localhost, 127.0.0.1, [::1] and the addresses it listens on, against DNS rebinding)")
	maxSessions := fs.Int("max-sessions", 32, "most sessions running at once (forks aside)")
	maxForks := fs.Int("max-forks", 64, "most forks running at once: a classroom's followers fork the presenter's run into copies of their own; a fork nobody watches ends after 2 minutes")
	lim := web.DefaultLimits
	fs.IntVar(&lim.Parallelism, "max-parallelism", lim.Parallelism, "bound on any operator's parallelism in one session: sandbox settings, rescale, scenarios and share links")
	fs.IntVar(&lim.TaskManagers, "max-taskmanagers", lim.TaskManagers, "bound on the TaskManagers of one session: sandbox settings, add-taskmanager, scenarios and share links")
	fs.IntVar(&lim.Keys, "max-keys", lim.Keys, "bound on the distinct keys a sandbox's source generates (every checkpoint copies their state)")
	fs.Int64Var(&lim.ReplaySteps, "max-replay-steps", lim.ReplaySteps, "bound on the steps a share link or an imported scenario replays")
	fs.IntVar(&lim.Commands, "max-commands", lim.Commands, "bound on the commands one session records (forks and share links replay them)")
	fs.DurationVar(&lim.ReplayTime, "max-replay-time", lim.ReplayTime, "bound on the computing time of one replay; a share link estimated above it is refused, a replay running over it is stopped")
	allowAttach := fs.Bool("allow-attach", false, "keep the attach page on when serving beyond this computer (--listen 0.0.0.0:8080); off by default there, since attach makes the server read addresses of its network for whoever asks")
	quiet := fs.Bool("quiet", false, "log only warnings and errors")
	lessonDir := fs.String("lessons", "", "add your own lessons from this folder (one lesson folder, or a folder of them) to the course; 'statelab lessons check --dir' first")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (serve takes only flags; run 'statelab serve -h')", fs.Arg(0))
		return code
	}
	if *maxSessions < 1 {
		code, _ := usageError(io, fs.Name(), "--max-sessions %d is below 1", *maxSessions)
		return code
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-forks", *maxForks}, {"max-followers", *maxFollowers}, {"max-classrooms", *maxClassrooms},
		{"max-parallelism", lim.Parallelism}, {"max-taskmanagers", lim.TaskManagers}, {"max-keys", lim.Keys},
		{"max-replay-steps", int(min(lim.ReplaySteps, 1<<30))}, {"max-commands", lim.Commands}, {"max-replay-time", int(min(lim.ReplayTime.Milliseconds(), 1<<30))}} {
		if f.v < 1 {
			code, _ := usageError(io, fs.Name(), "--%s %d is below 1", f.name, f.v)
			return code
		}
	}
	dir := *data
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			code, _ := usageError(io, fs.Name(), "cannot find the user's cache directory (%v); choose a directory with --data", err)
			return code
		}
		dir = filepath.Join(cache, "statelab")
	}
	var allow []string
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			allow = append(allow, strings.TrimRight(o, "/"))
		}
	}
	course, code := courseWith(*lessonDir, io)
	if code != exitOK {
		return code
	}
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: level}))

	srv, err := web.New(web.Config{DataDir: dir, Engines: web.NewEngine(logger), AllowOrigins: allow, AllowHosts: listenHosts(*addr, net.InterfaceAddrs), Limits: lim, MaxSessions: *maxSessions, MaxForks: *maxForks, MaxFollowers: *maxFollowers, MaxClassrooms: *maxClassrooms, Logger: logger, Lessons: course,
		// The Performance page's quick bench times the WebSocket hub too.
		Perf:   web.PerfConfig{WebFanOut: web.MeasureFanOut},
		Attach: web.AttachConfig{Off: beyondLoopback(*addr) && !*allowAttach}})
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%v", err)
		return code
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = srv.Close()
		if errors.Is(err, syscall.EADDRINUSE) {
			fmt.Fprintf(io.Err, "statelab serve: %s is already in use (is StateLab or another server running there?); choose another address, e.g. --addr 127.0.0.1:8081\n", *addr)
		} else {
			fmt.Fprintf(io.Err, "statelab serve: cannot listen on %s: %v; choose another address with --addr host:port\n", *addr, err)
		}
		return exitFail
	}
	fmt.Fprintf(io.Out, "StateLab is running at %s\n", appURL(ln.Addr()))
	base := strings.TrimSuffix(appURL(ln.Addr()), "/")
	if lan := lanURL(ln.Addr(), net.InterfaceAddrs); lan != "" {
		// Join links and QR codes must name an address students can reach.
		srv.SetPublicURL(lan)
		base = lan
		fmt.Fprintf(io.Out, "On the local network: %s/ (classroom join links and QR codes use it)\n", lan)
	}
	if *classroom != "" {
		if err := startClassroom(srv, *classroom, base, io.Out); err != nil {
			_ = ln.Close()
			_ = srv.Close()
			fmt.Fprintf(io.Err, "statelab serve: cannot open the classroom: %v\n", err)
			return exitUsage
		}
	}
	fmt.Fprintf(io.Out, "Session data: %s. Press Ctrl-C to stop.\n", dir)
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(io.Err, "statelab serve: %v\n", err)
		return exitFail
	}
	fmt.Fprintln(io.Out, "StateLab stopped: every session closed.")
	return exitOK
}

// appURL is the URL to open for addr: a wildcard host is shown as
// 127.0.0.1, so the printed link works when clicked.
func appURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// listenHosts are the names a server listening on addr answers besides the
// loopback ones (web.Config.AllowHosts, against DNS rebinding): the host it
// was started with and, on a wildcard address, every address of this
// machine's interfaces (the LAN address it prints among them).
func listenHosts(addr string, ifaceAddrs func() ([]net.Addr, error)) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	var out []string
	ip := net.ParseIP(host)
	if host != "" && (ip == nil || !ip.IsUnspecified()) {
		out = append(out, host)
	}
	if host == "" || (ip != nil && ip.IsUnspecified()) {
		if addrs, err := ifaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					out = append(out, n.IP.String())
				}
			}
		}
	}
	return out
}

// beyondLoopback reports whether a server listening on addr can be reached
// from other machines.
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
