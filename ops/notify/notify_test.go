package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/redrive/redrive/ops/alerts"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/notify"
	"github.com/redrive/redrive/ops/page"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/ops/tlstest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths/links"
)

// problems is an Evaluator whose answer the test sets.
type problems struct {
	mu sync.Mutex
	ps []health.Problem
}

func (p *problems) set(ps ...health.Problem) { p.mu.Lock(); p.ps = ps; p.mu.Unlock() }

// firing are problems that are ps now.
func firing(ps ...health.Problem) *problems {
	ev := &problems{}
	ev.set(ps...)
	return ev
}
func (p *problems) Evaluate(context.Context) health.Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	return health.Report{CheckedAt: time.Now(), Problems: append([]health.Problem(nil), p.ps...)}
}

// receiver is a webhook/Slack endpoint on loopback that checks the signature and records bodies.
type receiver struct {
	t      *testing.T
	secret string
	down   atomic.Int32 // answer 503 this many more times
	mu     sync.Mutex
	got    []map[string]any
	srv    *httptest.Server
}

func newReceiver(t *testing.T, secret string) *receiver {
	r := &receiver{t: t, secret: secret}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.down.Load() > 0 {
			r.down.Add(-1)
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if r.secret != "" {
			if got, want := req.Header.Get("X-Redrive-Signature"), notify.Sign([]byte(r.secret), body); got != want {
				t.Errorf("signature %q, want %q", got, want)
				http.Error(w, "bad signature", http.StatusUnauthorized)
				return
			}
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		r.mu.Lock()
		r.got = append(r.got, m)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) bodies() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.got...)
}

// count is how many bodies had key=key and state=state (webhook format).
func (r *receiver) count(key, state string) int {
	n := 0
	for _, b := range r.bodies() {
		if b["key"] == key && b["state"] == state {
			n++
		}
	}
	return n
}

// mailbox is an SMTP server (go-smtp) on loopback with STARTTLS and PLAIN auth.
type mailbox struct {
	mu   sync.Mutex
	msgs []string
}

type session struct {
	m    *mailbox
	auth bool
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "redrive" || pass != "s3cret" {
			return errors.New("bad credentials")
		}
		s.auth = true
		return nil
	}), nil
}
func (s *session) Mail(string, *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	return nil
}
func (s *session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.m.mu.Lock()
	s.m.msgs = append(s.m.msgs, string(b))
	s.m.mu.Unlock()
	return err
}
func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }

func newMailbox(t *testing.T) (*mailbox, notify.SMTP) {
	caFile, serverTLS, _ := tlstest.SelfSigned(t)
	m := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{m: m}, nil }))
	srv.Domain, srv.TLSConfig = "127.0.0.1", serverTLS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	return m, notify.SMTP{Host: "127.0.0.1", Port: port, Username: "redrive", Password: "s3cret",
		From: "redrive@example.com", To: []string{"oncall@example.com"}, CAFile: caFile}
}

func (m *mailbox) messages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.msgs...)
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	return storetest.Open(t)
}

func newNotifier(t *testing.T, st *store.Store, ev notify.Evaluator, owner string, cfg notify.Settings) *notify.Notifier {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = time.Millisecond // every Round evaluates
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 10
	}
	for i := range cfg.Channels {
		if cfg.Channels[i].SignatureHeader == "" {
			cfg.Channels[i].SignatureHeader = "X-Redrive-Signature"
		}
	}
	n, err := notify.New(notify.Options{Store: st, Problems: ev, Config: cfg, Owner: owner, LeaseTTL: 2 * time.Second,
		Tick: 20 * time.Millisecond, Backoff: func(int) time.Duration { return 50 * time.Millisecond }, Link: links.To})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Release)
	return n
}

// round is one evaluation and delivery. Round alone evaluates only when the interval has passed
// since the last evaluation, and a fast machine runs several rounds within even a millisecond.
func round(t *testing.T, n *notify.Notifier) {
	t.Helper()
	if _, err := n.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func problem(kind string, subject ...string) health.Problem {
	labels := map[string]string{}
	for i := 0; i+1 < len(subject); i += 2 {
		labels[subject[i]] = subject[i+1]
	}
	return health.Problem{Key: kind + "/" + strings.Join(subject, "/"), Kind: kind, Severity: health.Warning,
		Title: kind + " is on fire", Page: page.Of(page.Replays), Labels: labels, Since: time.Now()}
}

// One problem of every kind the health model has: each fires once and resolves once, on the
// webhook; the Slack and email channels get the kinds routed to them, in their formats.
func TestEachKindFiresOnceAndResolvesOnce(t *testing.T) {
	st := openStore(t)
	hook, slackRx := newReceiver(t, "hmac-secret"), newReceiver(t, "")
	mail, smtpCfg := newMailbox(t)
	kinds := []health.Problem{
		problem(health.KindKafkaGroup, "cluster", "main", "group", "billing"),
		problem(health.KindDeadLetters, "cluster", "main", "topic", "orders.DLT"),
		problem(health.KindDeadLetters, "broker", "rmq", "queue", "orders.dlq"),
		problem(health.KindQueueGrowing, "broker", "rmq", "queue", "work"),
		problem(health.KindOutboxStuck, "outbox", "orders"),
		problem(health.KindOutboxDead, "outbox", "orders"),
		problem(health.KindOutboxBacklog, "outbox", "orders"),
		problem(health.KindDependencyDown, "dependency", "kafka/main"),
		problem(health.KindKafkaUnavailable, "cluster", "main"),
		problem(health.KindRabbitUnavailable, "broker", "rmq"),
		problem(health.KindReplayAwaiting, "job", "j1"),
		problem(health.KindReplayDone, "job", "j2"),
		problem(health.KindReplayFailed, "job", "j3"),
		problem(health.KindReplayCancelled, "job", "j4"),
	}
	ev := &problems{}
	n := newNotifier(t, st, ev, "r1", notify.Settings{BaseURL: "https://redrive.example.com",
		Channels: []notify.ChannelSettings{
			{Name: "hook", Type: "webhook", URL: hook.srv.URL, Secret: "hmac-secret"},
			{Name: "slack", Type: "slack", URL: slackRx.srv.URL},
			{Name: "mail", Type: "email", SMTP: smtpCfg},
		},
		Rules: []notify.Rule{
			{Channels: []string{"hook"}, RepeatEvery: time.Hour},
			{Match: notify.Match{Kind: health.KindKafkaGroup, Cluster: "main"}, Channels: []string{"slack", "mail"}},
		}})
	ev.set(kinds...)
	for range 3 { // more evaluations than changes
		round(t, n)
	}
	ev.set()
	for range 3 {
		round(t, n)
	}
	for _, p := range kinds {
		if f, r := hook.count(p.Key, "firing"), hook.count(p.Key, "resolved"); f != 1 || r != 1 {
			t.Errorf("%s: %d firing, %d resolved on the webhook; want 1 and 1", p.Key, f, r)
		}
	}
	b := hook.bodies()[0]
	for _, f := range []string{"key", "kind", "state", "severity", "title", "summary", "link", "labels", "at"} {
		if _, ok := b[f]; !ok {
			t.Errorf("webhook body lacks %q: %v", f, b)
		}
	}
	if b["link"] != "https://redrive.example.com/replays" {
		t.Errorf("link %v", b["link"])
	}
	sl := slackRx.bodies()
	if len(sl) != 2 || !strings.HasPrefix(sl[0]["text"].(string), "Firing: ") || !strings.HasPrefix(sl[1]["text"].(string), "Resolved: ") {
		t.Fatalf("slack got %v", sl)
	}
	if blocks, _ := json.Marshal(sl[0]["blocks"]); !strings.Contains(string(blocks), `"url":"https://redrive.example.com/replays"`) {
		t.Errorf("slack blocks without the link button: %s", blocks)
	}
	msgs := mail.messages()
	if len(msgs) != 2 || !strings.Contains(msgs[0], "Subject: [Redrive] FIRING: kafka_group is on fire") ||
		!strings.Contains(msgs[1], "Subject: [Redrive] RESOLVED: kafka_group is on fire") {
		t.Fatalf("mail got %q", msgs)
	}
	// Fires again: a new episode, notified again.
	ev.set(kinds[0])
	round(t, n)
	if f := hook.count(kinds[0].Key, "firing"); f != 2 {
		t.Errorf("a problem firing again is notified again: %d", f)
	}
}

func TestNoRepeatBeforeRepeatEvery(t *testing.T) {
	p := problem(health.KindOutboxDead, "outbox", "orders")
	st, hook, ev, cfg := toOneHook(t, p)
	// Long enough that the round after the reminder ends well inside the next repeat_every even
	// on a loaded machine under -race (at 700 ms, a slow round once fired a second reminder).
	cfg.Rules[0].RepeatEvery = 3 * time.Second
	n := newNotifier(t, st, ev, "r1", cfg)
	// Rounds through the first part of repeat_every: it fires once and not again.
	waittest.Holds(t, 500*time.Millisecond, "one firing before repeat_every", func() bool {
		round(t, n)
		return hook.count(p.Key, "firing") == 1
	})
	roundsUntilFired(t, n, hook, p.Key, 2, "one reminder after repeat_every")
}

// roundsUntilFired runs notify rounds until key has fired want times, then one more round, which
// must not fire it again.
func roundsUntilFired(t *testing.T, n *notify.Notifier, hook *receiver, key string, want int, what string) {
	t.Helper()
	waittest.Until(t, 10*time.Second, what, func() bool {
		round(t, n)
		return hook.count(key, "firing") >= want
	})
	round(t, n)
	if c := hook.count(key, "firing"); c != want {
		t.Fatalf("%s: fired %d times, want %d", what, c, want)
	}
}

func TestSilenceHoldsIt(t *testing.T) {
	st := openStore(t)
	hook := newReceiver(t, "")
	ev := &problems{}
	p := problem(health.KindKafkaGroup, "cluster", "main", "group", "billing")
	other := problem(health.KindKafkaGroup, "cluster", "main", "group", "shipping")
	if _, err := st.CreateSilence(context.Background(), alerts.Silence{Matchers: map[string]string{"group": "billing"},
		EndsAt: time.Now().Add(3 * time.Second), CreatedBy: "ann"}); err != nil { // three rounds fit in it under -race
		t.Fatal(err)
	}
	ev.set(p, other)
	n := newNotifier(t, st, ev, "r1", hookOnly(hook))
	for range 3 {
		round(t, n)
	}
	if c := hook.count(p.Key, "firing"); c != 0 {
		t.Fatalf("silenced problem notified %d times", c)
	}
	if c := hook.count(other.Key, "firing"); c != 1 {
		t.Fatalf("unsilenced problem notified %d times", c)
	}
	roundsUntilFired(t, n, hook, p.Key, 1, "after the silence ended, a still-firing problem is notified once")
}

func TestReceiverDownThenUp(t *testing.T) {
	p := problem(health.KindOutboxStuck, "outbox", "orders")
	st, hook, ev, cfg := toOneHook(t, p)
	hook.down.Store(3)
	n := newNotifier(t, st, ev, "r1", cfg)
	waittest.Until(t, 5*time.Second, "delivered once the receiver is up", func() bool {
		_ = n.Round(context.Background()) // attempts fail while it is down
		return hook.count(p.Key, "firing") > 0
	})
	// Rounds past several back-offs (50 ms): the delivered notification is not sent again.
	waittest.Holds(t, 300*time.Millisecond, "delivered once", func() bool {
		_ = n.Round(context.Background())
		return hook.count(p.Key, "firing") == 1
	})
	log, err := st.Notifications(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].DeliveredAt == nil || log[0].Attempts != 4 {
		t.Fatalf("log %+v: want one delivered after 4 attempts", log)
	}
}

// toOneHook is the setup of a test of p firing towards one webhook: the store, the receiver, p's
// source (firing) and the config sending every problem to the receiver (hookOnly).
func toOneHook(t *testing.T, p health.Problem) (*store.Store, *receiver, *problems, notify.Settings) {
	t.Helper()
	st, hook := openStore(t), newReceiver(t, "")
	return st, hook, firing(p), hookOnly(hook)
}

// hookOnly sends every problem to the one webhook channel hook.
func hookOnly(hook *receiver) notify.Settings {
	return notify.Settings{
		Channels: []notify.ChannelSettings{{Name: "hook", Type: "webhook", URL: hook.srv.URL}},
		Rules:    []notify.Rule{{Channels: []string{"hook"}}}}
}

func TestTwoNotifiersOneNotification(t *testing.T) {
	p := problem(health.KindOutboxDead, "outbox", "orders")
	st, hook, ev, cfg := toOneHook(t, p)
	a, b := newNotifier(t, st, ev, "a", cfg), newNotifier(t, st, ev, "b", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	wg.Go(func() { _ = b.Run(ctx) })
	wg.Wait()
	if c := hook.count(p.Key, "firing"); c != 1 {
		t.Fatalf("two notifiers sent %d, want 1", c)
	}
}

func TestRecordedNotSentThenLeaderStops(t *testing.T) {
	p := problem(health.KindReplayAwaiting, "job", "j1")
	st, hook, ev, cfg := toOneHook(t, p)
	a := newNotifier(t, st, ev, "a", cfg)
	if lead, err := a.Evaluate(context.Background()); err != nil || !lead {
		t.Fatalf("a leads: %v %v", lead, err)
	}
	a.Release() // the leader stops after recording, before sending
	b := newNotifier(t, st, ev, "b", cfg)
	for range 3 {
		round(t, b)
	}
	if c := hook.count(p.Key, "firing"); c != 1 {
		t.Fatalf("the next leader sent it %d times, want 1", c)
	}
	log, _ := st.Notifications(context.Background(), 10)
	if len(log) != 1 {
		t.Fatalf("recorded %d notifications, want 1 (b did not record it again): %+v", len(log), log)
	}
}

func TestTestNotification(t *testing.T) {
	st := openStore(t)
	hook := newReceiver(t, "k")
	n := newNotifier(t, st, &problems{}, "r1", notify.Settings{
		Channels: []notify.ChannelSettings{{Name: "hook", Type: "webhook", URL: hook.srv.URL, Secret: "k"}}})
	if err := n.Test(context.Background(), "hook", "ann"); err != nil {
		t.Fatal(err)
	}
	if c := hook.count("test/hook", "test"); c != 1 {
		t.Fatalf("test notifications received: %d", c)
	}
	if err := n.Test(context.Background(), "nope", "ann"); err == nil {
		t.Fatal("unknown channel accepted")
	}
}

// A silence naming nothing watched is refused with the names it could use, each once: a Kafka
// cluster and a RabbitMQ broker are often both called "main".
func TestSilenceRefusalNamesEachSourceOnce(t *testing.T) {
	w := &notify.Watched{Clusters: []string{"main", "edge"}, Brokers: []string{"main"}}
	err := w.Refusal(context.Background(), map[string]string{"cluster": "nope"})
	if err == nil || !strings.Contains(err.Error(), "watches (main, edge):") {
		t.Fatalf("refusal %v; want the names main, edge once each", err)
	}
}

// An alert keeps when its problem began where the data says it, and otherwise when this episode
// fired — never the time of each evaluation, which would move the alert's start at every round.
func TestAlertSinceIsTheProblemsOrTheEpisodes(t *testing.T) {
	st := openStore(t)
	known, unknown := problem(health.KindKafkaGroup, "cluster", "main", "group", "billing"), problem(health.KindDeadLetters, "broker", "rmq", "queue", "orders.dlq")
	known.Since = time.Now().Add(-47 * time.Minute).Truncate(time.Microsecond)
	unknown.Since = time.Time{}
	ev := &problems{}
	ev.set(known, unknown)
	n := newNotifier(t, st, ev, "r1", notify.Settings{})
	var firstFired time.Time
	for i := range 3 {
		round(t, n)
		as, _, err := st.Alerts.NotifyState(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]alerts.Alert{}
		for _, a := range as {
			by[a.Key] = a
		}
		if a := by[known.Key]; !a.Since.Equal(known.Since) {
			t.Errorf("round %d: %s since %v, want the problem's %v", i, a.Key, a.Since, known.Since)
		}
		a := by[unknown.Key]
		if i == 0 {
			firstFired = a.FiredAt
		}
		if a.Since.IsZero() || !a.Since.Equal(a.FiredAt) || !a.FiredAt.Equal(firstFired) {
			t.Errorf("round %d: %s since %v, fired %v; want since = fired at, unchanged from the first round's %v", i, a.Key, a.Since, a.FiredAt, firstFired)
		}
	}
}
