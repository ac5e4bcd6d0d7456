package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/handlers"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
)

// Reloader re-reads the config file and puts what may change at run time in force: users, API
// tokens, roles (auth.users, auth.tokens, auth.proxy.group_roles and default_role), the
// redaction rules, and what the parts registered by cmd/console take (notify, thresholds). The new file is loaded and validated first, then every part is prepared, and
// only when all succeed is anything swapped: a bad file leaves the running config serving and the
// error says why. Other changed sections are reported as needing a restart. It is triggered by
// SIGHUP (cmd/console) and POST /api/v1/admin/reload (admin), both audited.
type Reloader struct {
	load  func() (*configs.Config, error)
	audit handlers.Auditor
	log   *slog.Logger

	mu      sync.Mutex
	running *configs.Config
	parts   []reloadPart
}

type reloadPart struct {
	what    string
	prepare func(*configs.Config) (commit func(), err error)
}

// NewReloader returns a Reloader for the running config; load reads and validates the file again
// (configs.Load with the same path and environment). web.New registers the parts it serves.
func NewReloader(running *configs.Config, load func() (*configs.Config, error), audit handlers.Auditor, log *slog.Logger) *Reloader {
	return &Reloader{running: running, load: load, audit: audit, log: log}
}

// Register adds a part that a reload puts in force: prepare builds and checks it from the new
// config without changing anything, and returns the commit that swaps it in (called only when
// every part prepared). what names it in the result ("notify"); a section named by a part is not
// reported as needing a restart.
func (r *Reloader) Register(what string, prepare func(*configs.Config) (func(), error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, reloadPart{what, prepare})
}

// ReloadResult says what a reload put in force and which changed sections wait for a restart.
type ReloadResult struct {
	Applied       []string `json:"applied"`
	RestartNeeded []string `json:"restart_needed"`
}

// Reload loads the file and applies it, or changes nothing and returns why (an ops.ErrInvalid).
// who is the audit actor (a user, token:<name>, or signal:SIGHUP).
func (r *Reloader) Reload(ctx context.Context, who access.Actor, sourceIP string) (ReloadResult, error) {
	res, err := r.reload()
	e := audit.Entry{Actor: who.Name, SourceIP: sourceIP, Action: "config.reload", Target: "config",
		Outcome: audit.OutcomeOK, Detail: map[string]any{"applied": res.Applied, "restart_needed": res.RestartNeeded}}
	if who.Role != access.Public { // a signal has no role
		e.Role = who.Role.String()
	}
	if err != nil {
		e.Outcome, e.Reason = audit.OutcomeFailed, err.Error()
		r.log.Warn("config reload refused: the running config keeps serving", "err", err, "actor", who.Name)
	} else {
		r.log.Info("config reloaded", "applied", res.Applied, "restart_needed", res.RestartNeeded, "actor", who.Name)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if aerr := r.audit.RecordAudit(actx, e); aerr != nil {
		r.log.Error("audit of a config reload failed", "err", aerr)
	}
	return res, err
}

func (r *Reloader) reload() (ReloadResult, error) {
	res := ReloadResult{Applied: []string{}, RestartNeeded: []string{}}
	cfg, err := r.load()
	if err != nil {
		return res, &ops.Error{Kind: ops.ErrInvalid, Message: "the running config keeps serving: " + err.Error()} // its own checks, for an admin
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var commits []func()
	var errs []error
	for _, p := range r.parts {
		commit, err := p.prepare(cfg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.what, err))
			continue
		}
		commits = append(commits, commit)
		res.Applied = append(res.Applied, p.what)
	}
	if len(errs) > 0 {
		res.Applied = []string{}
		return res, &ops.Error{Kind: ops.ErrInvalid, Message: "the running config keeps serving: " + errors.Join(errs...).Error()}
	}
	for _, c := range commits {
		c()
	}
	res.RestartNeeded = restartOnly(r.running, cfg, r.reloadable())
	r.running = cfg
	return res, nil
}

func (r *Reloader) reloadable() map[string]bool {
	m := map[string]bool{}
	for _, p := range r.parts {
		m[p.what] = true
	}
	return m
}

// restartOnly names the sections that differ between two configs and are read only at start.
// The thresholds (kafka[].lag, outboxes[].stale_ready_after) and notify are left out of the
// comparison when a part reloads them.
func restartOnly(old, cfg *configs.Config, reloadable map[string]bool) []string {
	out := []string{}
	diff := func(key string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, key)
		}
	}
	if !reloadable[PartNotify] {
		diff("notify", old.Notify, cfg.Notify)
	}
	if reloadable[PartThresholds] {
		old, cfg = withoutThresholds(old), withoutThresholds(cfg)
	}
	diff("listen", old.Listen, cfg.Listen)
	diff("read_only", old.ReadOnly, cfg.ReadOnly)
	diff("request_timeout", old.RequestTimeout, cfg.RequestTimeout)
	diff("log", old.Log, cfg.Log)
	diff("store", old.Store, cfg.Store)
	diff("auth.trusted_proxies", old.Auth.TrustedProxies, cfg.Auth.TrustedProxies)
	diff("auth.allowed_hosts", old.Auth.AllowedHosts, cfg.Auth.AllowedHosts)
	diff("auth.session", old.Auth.Session, cfg.Auth.Session)
	diff("auth.login_limits", old.Auth.LoginLimits, cfg.Auth.LoginLimits)
	diff("auth.secure_cookies", old.Auth.SecureCookies, cfg.Auth.SecureCookies)
	diff("sampler", old.Sampler, cfg.Sampler)
	diff("outboxes", old.Outboxes, cfg.Outboxes)
	diff("kafka", old.Kafka, cfg.Kafka)
	diff("rabbitmq", old.RabbitMQ, cfg.RabbitMQ)
	diff("consumers", old.Consumers, cfg.Consumers)
	diff("message_id", old.MessageID, cfg.MessageID)
	diff("replay", old.Replay, cfg.Replay)
	return out
}

// Names of the parts cmd/console registers.
const (
	PartNotify     = "notify"
	PartThresholds = "thresholds (kafka[].lag, outboxes[].stale_ready_after)"
)

// withoutThresholds is a copy of c whose reloadable thresholds are zero, to compare the rest.
func withoutThresholds(c *configs.Config) *configs.Config {
	cp := *c
	cp.Kafka = append([]configs.KafkaCluster(nil), c.Kafka...)
	for i := range cp.Kafka {
		cp.Kafka[i].Lag = configs.LagRules{}
	}
	cp.Outboxes = append([]configs.Outbox(nil), c.Outboxes...)
	for i := range cp.Outboxes {
		cp.Outboxes[i].StaleReadyAfter = 0
	}
	return &cp
}

// apiReload is POST /api/v1/admin/reload.
func (r *Reloader) apiReload(c echo.Context) error {
	if r == nil {
		return ops.NotFound("config reload is not available: the console was not started from a config file")
	}
	res, err := r.Reload(c.Request().Context(), handlers.ActorOf(c), c.RealIP())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
