package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/search"
	"github.com/redrive/redrive/web"
)

func serveCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "configs/console.yaml", "config file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := configs.Load(*path, getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stdout)
	for _, w := range cfg.Warnings() {
		log.Warn(w, "config", *path)
	}
	return serveReloadable(ctx, cfg, log, nil, func() (*configs.Config, error) { return configs.Load(*path, getenv) })
}

func newLogger(c configs.Log, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by configs
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Bounds of a connection besides request_timeout; see newHTTPServer.
const (
	headerTimeout = 10 * time.Second
	writeGrace    = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// newHTTPServer bounds every phase of a request, so that a slow or malicious client cannot hold a
// connection and a goroutine: the headers must arrive within headerTimeout (or request_timeout
// if shorter), the whole request, body included, within request_timeout — a body trickled a byte
// at a time is cut there — and the response must be written within request_timeout + writeGrace
// (the handler's context ends at request_timeout; the grace lets its error page and the audit
// writes that outlive it finish). An idle keep-alive connection is closed after idleTimeout.
func newHTTPServer(h http.Handler, requestTimeout time.Duration, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h,
		ReadHeaderTimeout: min(headerTimeout, requestTimeout),
		ReadTimeout:       requestTimeout,
		WriteTimeout:      requestTimeout + writeGrace,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// serve runs the console until ctx ends. When ready is not nil it receives the listening
// address (tests listen on port 0).
func serve(ctx context.Context, cfg *configs.Config, log *slog.Logger, ready chan<- string) error {
	return serveReloadable(ctx, cfg, log, ready, nil)
}

// serveReloadable is serve with config reload: when load is not nil, SIGHUP and
// POST /api/v1/admin/reload read the file again through it (see web.Reloader).
func serveReloadable(ctx context.Context, cfg *configs.Config, log *slog.Logger, ready chan<- string, load func() (*configs.Config, error)) error {
	a, err := buildApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	deps := a.webDeps(log)
	deps.Search.MaxScan, deps.Search.Timeout, deps.Search.ExportMinRole = cfg.Search.MaxScan, cfg.Search.Timeout.D(), cfg.Export.MinRole
	// What one person, and everyone, may run at once of what holds broker reads while it streams.
	deps.Search.ExportSlots = search.NewSlots("exports", cfg.Export.MaxRunningPerPerson, "export.max_running_per_person",
		cfg.Export.MaxRunning, "export.max_running")
	deps.Search.ScanSlots = search.NewSlots("filter scans", cfg.Search.MaxRunningPerPerson, "search.max_running_per_person",
		cfg.Search.MaxRunning, "search.max_running")
	deps.Search.ExportWriteTimeout = cfg.Export.WriteTimeout.D()
	deps.Doctor = doctor.New(cfg, a.doctorAdapters())
	var reloader *web.Reloader
	if load != nil {
		reloader = web.NewReloader(cfg, load, a.store, log)
	}
	e, err := web.New(deps,
		web.Options{RequestTimeout: cfg.RequestTimeout.D(), AuthNone: cfg.Auth.Mode == "none",
			ReadOnly: cfg.ReadOnly, Version: version, Auth: cfg.Auth, Listen: cfg.Listen, Reload: reloader,
			Audit: cfg.Audit, Silences: cfg.Notify.Silences})
	if err != nil {
		return err
	}
	bgCtx, stopBackground := context.WithCancel(ctx)
	waitBackground := a.background(bgCtx, log)
	defer func() { stopBackground(); waitBackground() }()
	if reloader != nil {
		a.registerReload(reloader)
		defer reloadOnSIGHUP(bgCtx, reloader)()
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	srv := newHTTPServer(e, cfg.RequestTimeout.D(), log)
	log.Info("console listening", "url", "http://"+ln.Addr().String(), "version", version)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
