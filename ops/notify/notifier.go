package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/alerts"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/lease"
	"github.com/redrive/redrive/ops/page"
)

// LeaseName is the lease (in the sampler's lease table) whose holder evaluates and sends.
const LeaseName = "notify"

// Store is what the notifier keeps in the console's store (ops/store implements it).
type Store interface {
	AcquireSourceLease(ctx context.Context, source, owner string, ttl time.Duration) (lease.Lease, bool, error)
	RenewSourceLease(ctx context.Context, l lease.Lease) (lease.Lease, error)
	ReleaseSourceLease(ctx context.Context, l lease.Lease) error
	NotifyState(ctx context.Context) ([]alerts.Alert, []alerts.Sent, error)
	Silences(ctx context.Context) ([]alerts.Silence, error)
	WriteNotifyRound(ctx context.Context, l lease.Lease, r alerts.Round) error
	DueNotifications(ctx context.Context, limit int) ([]alerts.Notification, error)
	ClaimNotification(ctx context.Context, l *lease.Lease, id int64, retry time.Duration) (int, bool, error)
	SettleNotification(ctx context.Context, id int64, sendErr error, giveUp bool) error
	RecordNotification(ctx context.Context, n alerts.NewNotification) (int64, error)
}

// Evaluator computes the current problems (health.Monitor).
type Evaluator interface {
	Evaluate(ctx context.Context) health.Report
}

// Options configure a Notifier.
type Options struct {
	Store    Store     // required
	Problems Evaluator // required
	Config   Settings
	// Channels are built from Config.Channels when nil (tests may hand their own).
	Channels []Channel
	// Owner is this replica's ID in the lease; required.
	Owner string
	// LeaseTTL is how long the lease lasts unrenewed; zero means 3 × Config.Interval, at least 10 s.
	LeaseTTL time.Duration
	// Tick is how often due deliveries (and retries) are attempted; zero means 1 s.
	Tick time.Duration
	// Backoff is the wait before attempt n+1 after attempt n failed; nil means 1 s × 2^(n-1), at
	// most 5 min.
	Backoff func(attempt int) time.Duration
	Logger  *slog.Logger // nil discards
	// Link is the console path of a page a problem names (paths/links.To, wired by cmd): the
	// link an alert keeps and a notification carries. nil: no links.
	Link func(page.Page, map[string]string) string
}

// Notifier evaluates problems and delivers notifications while it holds the notify lease.
type Notifier struct {
	o     Options // o.Config is the config at start; conf is what is in force
	conf  atomic.Pointer[conf]
	total *prometheus.CounterVec

	mu       sync.Mutex // guards lease and lastEval; serializes rounds
	lease    *lease.Lease
	until    time.Time // local deadline of lease
	renewed  time.Time
	lastEval time.Time
}

// New builds a Notifier; it does nothing until Run or Round.
func New(o Options) (*Notifier, error) {
	if o.Store == nil || o.Problems == nil || o.Owner == "" {
		return nil, fmt.Errorf("notify: store, problems and owner are required: %w", ops.ErrInvalid)
	}
	if o.Config.Interval == 0 {
		o.Config.Interval = 30 * time.Second
	}
	if o.Config.MaxAttempts == 0 {
		o.Config.MaxAttempts = 10
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = max(3*o.Config.Interval, 10*time.Second)
	}
	if o.Tick == 0 {
		o.Tick = time.Second
	}
	if o.Backoff == nil {
		o.Backoff = func(n int) time.Duration {
			return min(time.Second<<min(max(n-1, 0), 20), 5*time.Minute)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{o: o}
	n.total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redrive_notifications_total",
		Help: "Notification delivery attempts by channel and outcome (delivered, failed, given_up).",
	}, []string{"channel", "outcome"})
	c, err := newConf(o.Config, o.Channels)
	if err != nil {
		return nil, err
	}
	n.install(c)
	return n, nil
}

// conf is what a config reload may change: rules, channels, links, attempts, the interval and
// the new-group window. It is replaced whole, so a round reads one consistent version.
type conf struct {
	cfg      Settings
	channels map[string]Channel
	names    []string // config order
}

// newConf builds the channels of cfg (or takes the given ones) and fills cfg's defaults.
func newConf(cfg Settings, given []Channel) (*conf, error) {
	if cfg.Interval == 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 10
	}
	if given == nil {
		for _, c := range cfg.Channels {
			ch, err := NewChannel(c, nil)
			if err != nil {
				return nil, err
			}
			given = append(given, ch)
		}
	}
	c := &conf{cfg: cfg, channels: map[string]Channel{}}
	for _, ch := range given {
		c.channels[ch.Name()] = ch
		c.names = append(c.names, ch.Name())
	}
	return c, nil
}

func (n *Notifier) install(c *conf) {
	for _, name := range c.names {
		for _, out := range []string{"delivered", "failed", "given_up"} {
			n.total.WithLabelValues(name, out)
		}
	}
	n.conf.Store(c)
}

// PrepareReload builds what cfg describes and returns the function that puts it in force, or
// why it cannot (a channel that cannot be built): a config reload calls it for every part first
// and commits only when all succeed. Notifications already recorded for a channel that is gone
// are given up with that reason at their next attempt; the lease's length stays as at start.
func (n *Notifier) PrepareReload(cfg Settings) (commit func(), err error) {
	c, err := newConf(cfg, nil)
	if err != nil {
		return nil, err
	}
	return func() { n.install(c) }, nil
}

// Collectors are the notifier's metrics.
func (n *Notifier) Collectors() []prometheus.Collector { return []prometheus.Collector{n.total} }

// Channels are the configured channels' names, in config order.
func (n *Notifier) Channels() []string { return n.conf.Load().names }

// Run takes part in leadership and, while leading, evaluates every notify.interval and delivers
// due notifications every tick, until ctx ends; it then gives the lease up.
func (n *Notifier) Run(ctx context.Context) error {
	t := time.NewTicker(n.o.Tick)
	defer t.Stop()
	defer n.Release()
	for {
		if err := n.Round(ctx); err != nil && ctx.Err() == nil {
			n.o.Logger.Warn("notify round failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round is one tick: keep or take the lease; when leading, evaluate if notify.interval has passed
// since the last evaluation, then deliver what is due.
func (n *Notifier) Round(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.leadLocked(ctx)
	if err != nil || l == nil {
		return err
	}
	if time.Since(n.lastEval) >= n.conf.Load().cfg.Interval {
		if err := n.evaluateLocked(ctx, *l); err != nil {
			return err
		}
		n.lastEval = time.Now()
	}
	return n.deliverLocked(ctx, *l)
}

// Evaluate takes or keeps the lease and, when leading, records the notifications the current
// problems call for, without delivering them. It reports whether this replica leads.
func (n *Notifier) Evaluate(ctx context.Context) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, err := n.leadLocked(ctx)
	if err != nil || l == nil {
		return false, err
	}
	n.lastEval = time.Now()
	return true, n.evaluateLocked(ctx, *l)
}

// Leading reports whether this replica holds the notify lease (as of its last renewal).
func (n *Notifier) Leading() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lease != nil && time.Now().Before(n.until)
}

// Release gives the lease up, so another replica may lead at once.
func (n *Notifier) Release() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := n.o.Store.ReleaseSourceLease(ctx, *n.lease); err != nil {
		n.o.Logger.Warn("notify: releasing the lease failed; it lapses on its own", "err", err)
	}
	n.lease = nil
}

// leadLocked renews the held lease (every TTL/4) or tries to take it; nil when another leads.
func (n *Notifier) leadLocked(ctx context.Context) (*lease.Lease, error) {
	start := time.Now()
	if n.lease != nil {
		if start.Sub(n.renewed) < n.o.LeaseTTL/4 && start.Before(n.until) {
			return n.lease, nil
		}
		l, err := n.o.Store.RenewSourceLease(ctx, *n.lease)
		switch {
		case errors.Is(err, lease.ErrFenced):
			n.o.Logger.Warn("notify leadership lost: another replica took the lease over", "token", n.lease.Token)
			n.lease = nil
		case err != nil:
			if start.After(n.until) {
				n.lease = nil
			}
			return nil, fmt.Errorf("notify: %w", err)
		default:
			n.lease, n.until, n.renewed = &l, start.Add(n.o.LeaseTTL), start
			return n.lease, nil
		}
	}
	l, ok, err := n.o.Store.AcquireSourceLease(ctx, LeaseName, n.o.Owner, n.o.LeaseTTL)
	if err != nil || !ok {
		return nil, err
	}
	n.o.Logger.Info("notify leadership taken", "token", l.Token)
	n.lease, n.until, n.renewed, n.lastEval = &l, start.Add(n.o.LeaseTTL), start, time.Time{}
	return n.lease, nil
}

type sentKey struct{ key, channel string }

// evaluateLocked diffs the current problems against the stored alerts and records, fenced by l,
// the alerts' new state and the notifications due: a first firing per channel, a reminder after
// repeat_every, a resolution where the firing was sent. Silenced problems are recorded but not
// notified; a silence that ends lets a still-firing problem be notified then.
func (n *Notifier) evaluateLocked(ctx context.Context, l lease.Lease) error {
	c := n.conf.Load()
	report := n.o.Problems.Evaluate(ctx)
	known, sentList, err := n.o.Store.NotifyState(ctx)
	if err != nil {
		return err
	}
	silences, err := n.o.Store.Silences(ctx)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	byKey := make(map[string]alerts.Alert, len(known))
	for _, a := range known {
		byKey[a.Key] = a
	}
	sent := make(map[sentKey]alerts.Sent, len(sentList))
	for _, s := range sentList {
		sent[sentKey{s.Key, s.Channel}] = s
	}
	silenced := func(p health.Problem) bool {
		for _, s := range silences {
			if now.Before(s.EndsAt) && MatchesAll(s.Matchers, p) {
				return true
			}
		}
		return false
	}
	var round alerts.Round
	add := func(a alerts.Alert, state string, seq int, ch string, at time.Time) error {
		body, err := json.Marshal(n.event(a, state, at))
		if err != nil {
			return err
		}
		round.Notifications = append(round.Notifications, alerts.NewNotification{Key: a.Key, Episode: a.Episode, State: state,
			Seq: seq, Channel: ch, Event: body})
		return nil
	}
	current := map[string]bool{}
	for _, p := range report.Problems {
		if current[p.Key] {
			continue
		}
		current[p.Key] = true
		old, known := byKey[p.Key]
		fired := !known || !old.Firing
		a := alerts.Alert{Key: p.Key, Kind: p.Kind, Severity: p.Severity, Title: p.Title, Summary: p.Summary, Link: n.link(p.Page, p.Labels),
			Labels: p.Labels, Since: p.Since, Episode: old.Episode, Firing: true, FiredAt: old.FiredAt}
		if fired {
			a.Episode, a.FiredAt = old.Episode+1, now
		}
		if a.Since.IsZero() { // the data does not say when it began: since this episode fired
			a.Since = a.FiredAt
		}
		if fired || a.Title != old.Title || a.Severity != old.Severity || a.Summary != old.Summary {
			round.Alerts = append(round.Alerts, a)
		}
		if silenced(p) {
			continue
		}
		for _, r := range routes(c.cfg.Rules, p) {
			last, had := sent[sentKey{p.Key, r.channel}]
			seq := 0
			switch {
			case fired || !had:
			case r.repeat > 0 && now.Sub(last.At) >= r.repeat:
				seq = last.Seq + 1
			default:
				continue
			}
			if err := add(a, StateFiring, seq, r.channel, now); err != nil {
				return err
			}
		}
	}
	for _, a := range known {
		if !a.Firing || current[a.Key] {
			continue
		}
		a.Firing, a.ResolvedAt = false, &now
		round.Alerts = append(round.Alerts, a)
		p := problemOf(a)
		if silenced(p) {
			continue
		}
		for _, r := range routes(c.cfg.Rules, p) {
			if _, had := sent[sentKey{a.Key, r.channel}]; had {
				if err := add(a, StateResolved, 0, r.channel, now); err != nil {
					return err
				}
			}
		}
	}
	if len(round.Alerts) == 0 && len(round.Notifications) == 0 {
		return nil
	}
	if err := n.o.Store.WriteNotifyRound(ctx, l, round); err != nil {
		if errors.Is(err, lease.ErrFenced) {
			n.lease = nil
		}
		return err
	}
	return nil
}

// link is the console path of p for the subject labels names, "" without Options.Link.
func (n *Notifier) link(p page.Page, labels map[string]string) string {
	if n.o.Link == nil {
		return ""
	}
	return n.o.Link(p, labels)
}

func problemOf(a alerts.Alert) health.Problem {
	return health.Problem{Key: a.Key, Kind: a.Kind, Severity: a.Severity, Title: a.Title, Summary: a.Summary,
		Labels: a.Labels, Since: a.Since}
}

func (n *Notifier) event(a alerts.Alert, state string, at time.Time) Event {
	link := a.Link
	if n.conf.Load().cfg.BaseURL != "" && link != "" {
		link = trimSlash(n.conf.Load().cfg.BaseURL) + link
	}
	// What a problem says comes from names and messages anyone can write (a queue, a group, an
	// exception): every channel gets it inert, with no control or bidi character to act on.
	labels := make(map[string]string, len(a.Labels))
	for k, v := range a.Labels {
		labels[ops.InertText(k)] = ops.InertText(v)
	}
	return Event{Key: ops.InertText(a.Key), Kind: a.Kind, State: state, Severity: a.Severity, Title: ops.InertText(a.Title),
		Summary: ops.InertText(a.Summary), Link: ops.InertText(link), Labels: labels, At: at}
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// deliverLocked sends the due notifications, each claimed under l first (so that it is sent by
// one replica, and retried after the backoff if this one dies mid-send).
func (n *Notifier) deliverLocked(ctx context.Context, l lease.Lease) error {
	due, err := n.o.Store.DueNotifications(ctx, 100)
	if err != nil {
		return err
	}
	var errs []error
	for _, x := range due {
		if err := n.deliver(ctx, &l, x); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deliver makes one attempt at x; l nil is unfenced (a test notification).
func (n *Notifier) deliver(ctx context.Context, l *lease.Lease, x alerts.Notification) error {
	attempts, ok, err := n.o.Store.ClaimNotification(ctx, l, x.ID, n.o.Backoff(x.Attempts+1))
	if err != nil || !ok {
		return err
	}
	var e Event
	sendErr := json.Unmarshal(x.Event, &e)
	c := n.conf.Load()
	ch, known := c.channels[x.Channel]
	if sendErr == nil && !known {
		sendErr = fmt.Errorf("channel %q is not configured (any more)", x.Channel)
	}
	if sendErr == nil {
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		sendErr = ch.Send(sctx, e)
		cancel()
	}
	giveUp := sendErr != nil && (attempts >= c.cfg.MaxAttempts || !known || x.State == StateTest)
	switch {
	case sendErr == nil:
		n.total.WithLabelValues(x.Channel, "delivered").Inc()
	case giveUp:
		n.total.WithLabelValues(x.Channel, "given_up").Inc()
		n.o.Logger.Warn("notification given up", "id", x.ID, "channel", x.Channel, "key", x.Key, "attempts", attempts, "err", sendErr)
	default:
		n.total.WithLabelValues(x.Channel, "failed").Inc()
		n.o.Logger.Info("notification attempt failed; retrying", "id", x.ID, "channel", x.Channel, "attempt", attempts, "err", sendErr)
	}
	// Settled without the caller's cancellation: a send that happened must be recorded.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := n.o.Store.SettleNotification(sctx, x.ID, sendErr, giveUp); err != nil {
		return err
	}
	if sendErr != nil {
		return fmt.Errorf("notification %d to %s: %w", x.ID, x.Channel, sendErr)
	}
	return nil
}

// Test records and sends a test notification to channel at once, from this replica, and returns
// the send's error (the delivery log keeps it too). ops.ErrNotFound for an unknown channel.
func (n *Notifier) Test(ctx context.Context, channel, actor string) error {
	if _, ok := n.conf.Load().channels[channel]; !ok {
		return ops.NotFound("notification channel %q is not configured", ops.Echo(channel))
	}
	now := time.Now().UTC()
	e := Event{Key: "test/" + channel, Kind: "test", State: StateTest, Severity: health.Info,
		Title:   "Test notification from Redrive",
		Summary: "Sent by " + actor + " from the notifications page to check the channel " + channel + ".",
		Link:    n.link(page.Of(page.Notifications), nil), Labels: map[string]string{"channel": channel}, At: now}
	if n.conf.Load().cfg.BaseURL != "" {
		e.Link = trimSlash(n.conf.Load().cfg.BaseURL) + e.Link
	}
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	id, err := n.o.Store.RecordNotification(ctx, alerts.NewNotification{Key: e.Key, State: StateTest,
		Seq: int(now.UnixNano() % (1 << 31)), Channel: channel, Event: body})
	if err != nil {
		return err
	}
	return n.deliver(ctx, nil, alerts.Notification{ID: id, Key: e.Key, State: StateTest, Channel: channel, Event: body})
}
