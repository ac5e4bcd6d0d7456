// Package rabbit is Redrive's view of one RabbitMQ broker: queues with their depths, rates and
// dead-letter settings, the dead-letter topology (which queue dead-letters where, retry loops),
// browsing a queue without disturbing it, x-death decoding and error grouping.
//
// Everything about the broker's state comes from the management HTTP API (through rabbit-hole, and
// one direct list call for queues, see Queues); messages are read over AMQP 0-9-1 (amqp091-go).
// AMQP connections are dialled lazily, one per vhost, on the first operation that needs one, so a
// broker that is down when the console starts only fails the panels that use it.
//
// Errors carry the ops error kinds: an unknown vhost or queue wraps ops.ErrNotFound, a browse that
// would change the queue wraps ops.ErrConflict with the reason, bad input is an ops.Invalid, and a
// broker that cannot be reached (or refuses the console's credentials) wraps ops.ErrUnavailable.
package rabbit

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
)

// DefaultTimeout bounds one management API request and one AMQP dial.
const DefaultTimeout = 10 * time.Second

// defaultDeadLetterQueues are configs' defaults, repeated for a zero config built in code.
var defaultDeadLetterQueues = []string{"*.dlq", "*.DLQ", "dead-letter*"}

// Broker is one configured RabbitMQ broker. It is safe for concurrent use. The management client
// is stateless; AMQP connections (one per vhost) are opened on first use, shared by operations,
// and replaced when the broker closes them. Each operation uses its own channel.
type Broker struct {
	name     string
	amqpURL  string
	tlsConf  *tls.Config // nil: plain TCP, or amqp091's defaults for amqps://
	vhosts   []string    // watched vhosts; empty = all
	patterns []string    // dead_letter_queues globs
	ids      configs.MessageIDRules
	timeout  time.Duration

	mgmtURL  string
	user     string
	password string
	hc       *http.Client       // direct management calls (queue list), with keep-alive
	rh       *rabbithole.Client // typed management calls

	// Browse pacing; fields so tests can shorten them.
	firstWait time.Duration // longest wait for the first delivery
	idleWait  time.Duration // the browse ends when no delivery arrived for this long
	// noEffectivePolicy drops effective_policy_definition from the queue columns, as an older
	// management plugin would; tests use it to exercise the policy fallback.
	noEffectivePolicy bool
	// rawConn, when set (tests), is given each dialled connection and returns the one AMQP's
	// frames are written to under the coalescing writer (coalesce.go): a test holds writes there.
	rawConn func(net.Conn) net.Conn
	// browsing serializes browses of a queue (see browse.go); its zero value is ready to use.
	browsing browseGuard
	// custody keeps messages a read of a delivery-limited quorum queue must not return (custody.go).
	custody custodyState
	// returned remembers, by QueueRef, what the last read returned to a 4.x quorum queue's head
	// (returnedAhead).
	returned sync.Map
	// ver caches Version (versionTTL).
	ver struct {
		mu sync.Mutex
		v  Version
		at time.Time
	}

	mu    sync.Mutex
	conns map[string]*amqp.Connection // by vhost
}

// New builds the management client for cfg and checks the configuration. It does not dial: a
// broker that is down makes the first call (or Ping) fail with ops.ErrUnavailable, not New. ids are
// the rules that find a message's idempotency key (Message.MessageID). A bad URL, TLS file or
// dead_letter_queues pattern is an ops.ErrInvalid naming the key.
func New(cfg configs.RabbitMQBroker, ids configs.MessageIDRules) (*Broker, error) {
	fail := func(err error) (*Broker, error) { return nil, fmt.Errorf("rabbitmq %s: %w", cfg.Name, err) }
	u, err := amqp.ParseURI(string(cfg.URL))
	if err != nil {
		return fail(ops.Invalid("url", "must be an amqp:// or amqps:// URL"))
	}
	mu, err := url.Parse(cfg.ManagementURL)
	if err != nil || (mu.Scheme != "http" && mu.Scheme != "https") || mu.Host == "" {
		return fail(ops.Invalid("management_url", "must be an http(s)://host:port URL"))
	}
	user, password := cfg.ManagementUser, string(cfg.ManagementPassword)
	if user == "" {
		user, password = u.Username, u.Password
	}
	patterns := cfg.DeadLetterQueues
	if len(patterns) == 0 {
		patterns = defaultDeadLetterQueues
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fail(ops.Invalid("dead_letter_queues", fmt.Sprintf("bad pattern %q", p)))
		}
	}
	var tc *tls.Config
	if cfg.TLS != nil && cfg.TLS.Enabled {
		if tc, err = cfg.TLS.ClientConfig(); err != nil {
			return fail(err)
		}
	}

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tc
	transport.MaxIdleConnsPerHost = 4
	hc := &http.Client{Transport: transport, Timeout: DefaultTimeout}
	endpoint := strings.TrimRight(mu.String(), "/")
	rh, err := rabbithole.NewTLSClient(endpoint, user, password, transport)
	if err != nil {
		return fail(ops.Invalid("management_url", err.Error()))
	}
	rh.SetTimeout(DefaultTimeout)

	return &Broker{
		name:      cfg.Name,
		amqpURL:   string(cfg.URL),
		tlsConf:   tc,
		vhosts:    append([]string(nil), cfg.Vhosts...),
		patterns:  patterns,
		ids:       ids,
		timeout:   DefaultTimeout,
		mgmtURL:   endpoint,
		user:      user,
		password:  password,
		hc:        hc,
		rh:        rh,
		firstWait: 2 * time.Second,
		idleWait:  500 * time.Millisecond,
		conns:     map[string]*amqp.Connection{},
	}, nil
}

// Name is the broker's configured name.
func (b *Broker) Name() string { return b.name }

// Close closes the AMQP connections. The Broker stays usable: a later operation dials again.
func (b *Broker) Close() {
	b.mu.Lock()
	conns := b.conns
	b.conns = map[string]*amqp.Connection{}
	b.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	b.hc.CloseIdleConnections()
}

// Ping asks the management API for its overview (GET /api/overview), for /readyz. It returns an
// ops.ErrUnavailable when the API does not answer, or refuses the credentials, within the timeout.
func (b *Broker) Ping(ctx context.Context) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var ov struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := b.getJSON(ctx, "overview", url.Values{"columns": {"rabbitmq_version"}}, &ov); err != nil {
		return b.fail("ping", err)
	}
	return nil
}

// watched reports whether vhost is one the console is configured to look at.
func (b *Broker) watched(vhost string) bool {
	if len(b.vhosts) == 0 {
		return true
	}
	for _, v := range b.vhosts {
		if v == vhost {
			return true
		}
	}
	return false
}

// isDLQName reports whether a queue name matches the configured dead_letter_queues globs.
func (b *Broker) isDLQName(name string) bool {
	for _, p := range b.patterns {
		if matchName(p, name) {
			return true
		}
	}
	return false
}

// nameSlash stands for '/' while matchName matches: a character no queue name is expected to hold.
const nameSlash = "\uffff"

// matchName is path.Match over a RabbitMQ name, in which '/' is a character like any other:
// path.Match's * and ? stop at '/' (a path separator), so "*.dlq" missed "billing/invoices.dlq".
func matchName(pattern, name string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", nameSlash), strings.ReplaceAll(name, "/", nameSlash))
	return ok
}

// bound gives ctx the broker's timeout unless it already ends sooner.
func (b *Broker) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return ops.Bound(ctx, b.timeout)
}

// opEchoLimit bounds, in bytes, how much of an operation (which names a vhost, a queue, an
// exchange) a message for a person quotes.
const opEchoLimit = 160

// fail wraps err with the broker, the operation and an ops error kind. Errors that already carry a
// kind keep it; a management 404 is ErrNotFound; AMQP's NOT_FOUND closes a channel with code 404
// and becomes ErrNotFound, RESOURCE_LOCKED (405, an exclusive queue) ErrConflict; ACCESS_REFUSED
// (403), and the management API's 401/403 for a vhost its user may not access, are ErrForbidden
// naming the user and the permission it lacks (refused); a caller's cancellation passes through;
// everything else — dial failures, timeouts, 5xx, a failed management login — is ErrUnavailable.
func (b *Broker) fail(op string, err error) error {
	full := op
	// What a person may read quotes the caller's names cut (a 100,000-character queue name came
	// back whole); the internal error, for the log, keeps them.
	op = payload.Clip(op, opEchoLimit)
	var rhErr rabbithole.ErrorResponse
	var amqpErr *amqp.Error
	if r, ok := b.refused(op, full, err); ok {
		return r
	}
	switch {
	case errors.Is(err, ops.ErrNotFound), errors.Is(err, ops.ErrInvalid), errors.Is(err, ops.ErrConflict),
		errors.Is(err, ops.ErrUnavailable), errors.Is(err, ops.ErrForbidden):
		return fmt.Errorf("rabbitmq %s: %s: %w", b.name, op, err) // its text may be shown (ops.Message)
	case errors.As(err, &rhErr) && rhErr.StatusCode == http.StatusNotFound:
		return &ops.Error{Kind: ops.ErrNotFound, Message: fmt.Sprintf("rabbitmq broker %q: %s: not found", b.name, op),
			Err: fmt.Errorf("rabbitmq %s: %s: %w", b.name, full, err)}
	case errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound:
		return &ops.Error{Kind: ops.ErrNotFound, Message: fmt.Sprintf("rabbitmq broker %q: %s: not found", b.name, op),
			Err: fmt.Errorf("rabbitmq %s: %s: %s", b.name, full, amqpErr.Reason)}
	case errors.As(err, &amqpErr) && amqpErr.Code == amqp.ResourceLocked:
		return &ops.Error{Kind: ops.ErrConflict,
			Message: fmt.Sprintf("rabbitmq broker %q: %s: the queue is exclusive to another connection", b.name, op),
			Err:     fmt.Errorf("rabbitmq %s: %s: %s", b.name, full, amqpErr.Reason)}
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("rabbitmq %s: %s: %w", b.name, op, err)
	default:
		// The client's error names the broker's address: it is for the log.
		return ops.Unavailable(fmt.Errorf("rabbitmq %s: %s: %w", b.name, full, err),
			"rabbitmq broker %q did not answer, or refused (%s); try again, or see the console's log for its error", b.name, op)
	}
}

// apiError is a management API answer with a status of 400 or more.
type apiError struct {
	Status int
	Reason string
	Path   string // what was asked, escaped: "queues/%2F/orders.dlq"
}

func (e *apiError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("management API: HTTP %d", e.Status)
	}
	return fmt.Sprintf("management API: HTTP %d: %s", e.Status, e.Reason)
}

// Is maps 404 to ops.ErrNotFound; other statuses stay plain (fail makes them ErrUnavailable).
func (e *apiError) Is(target error) bool {
	return target == ops.ErrNotFound && e.Status == http.StatusNotFound
}

// getJSON GETs /api/<p> (p already escaped) with query q and decodes the JSON answer into out.
// Numbers decode as json.Number where out holds interfaces, so large integers stay exact.
func (b *Broker) getJSON(ctx context.Context, p string, q url.Values, out any) error {
	u := b.mgmtURL + "/api/" + p
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(b.user, b.password)
	req.Header.Set("Accept", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var e struct {
			Error  string `json:"error"`
			Reason string `json:"reason"`
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = json.Unmarshal(body, &e)
		reason := e.Reason
		if reason == "" {
			reason = e.Error
		}
		return &apiError{Status: resp.StatusCode, Reason: reason, Path: p}
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("management API: decode %s: %w", p, err)
	}
	return nil
}

// call runs a rabbit-hole request, which takes no context, so that the caller can give up when ctx
// ends. The request itself is bounded by the client's timeout and finishes in the background.
func call[T any](ctx context.Context, f func() (T, error)) (T, error) { return ops.Within(ctx, f) }

// channel opens a channel on the shared connection for vhost, dialling it first if needed.
func (b *Broker) channel(ctx context.Context, vhost string) (*amqp.Channel, error) {
	conn, err := b.conn(ctx, vhost)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil && conn.IsClosed() {
		// The broker closed the connection since we last used it: dial once more.
		b.forget(vhost, conn)
		if conn, err = b.conn(ctx, vhost); err != nil {
			return nil, err
		}
		ch, err = conn.Channel()
	}
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	return ch, nil
}

func (b *Broker) conn(ctx context.Context, vhost string) (*amqp.Connection, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.conns[vhost]; c != nil && !c.IsClosed() {
		return c, nil
	}
	timeout := b.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("redrive console (" + b.name + ")")
	c, err := amqp.DialConfig(b.amqpURL, amqp.Config{
		Vhost:           vhost,
		TLSClientConfig: b.tlsConf,
		Properties:      props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bounds the TLS and AMQP handshakes; amqp091 clears it once the connection is open.
			if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
				nc.Close()
				return nil, err
			}
			if b.rawConn != nil {
				nc = b.rawConn(nc)
			}
			return newCoalescingConn(nc), nil // a replay's publishes in a few writes (coalesce.go)
		},
	})
	if err != nil {
		var amqpErr *amqp.Error
		if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotAllowed {
			// RabbitMQ refuses connection.open with NOT_ALLOWED to a vhost that does not exist, and
			// to one the user has no permissions in: only the reason tells them apart.
			if r := parseRefusal(amqpErr.Reason); r.complete {
				return nil, &ops.Error{Kind: ops.ErrForbidden, Message: r.message(), Err: fmt.Errorf("dial vhost %q: %w", vhost, err)}
			}
			return nil, &ops.Error{Kind: ops.ErrNotFound, Message: fmt.Sprintf("vhost %q not found", vhost),
				Err: fmt.Errorf("dial vhost %q: %s", vhost, amqpErr.Reason)}
		}
		return nil, fmt.Errorf("dial vhost %q: %w", vhost, err)
	}
	b.conns[vhost] = c
	return c, nil
}

func (b *Broker) forget(vhost string, c *amqp.Connection) {
	b.mu.Lock()
	if b.conns[vhost] == c {
		delete(b.conns, vhost)
	}
	b.mu.Unlock()
}

// NodeUptimes is how long each running node of the broker has been up, by node name, from the
// management API. A start (now less the uptime) later than at the last look is a node that started again:
// one that crashed before it wrote acks to disk returns the acked messages (AMQP acks are not
// confirmed), which is why the replay engine watches it.
func (b *Broker) NodeUptimes(ctx context.Context) (map[string]time.Duration, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var nodes []struct {
		Name    string `json:"name"`
		Uptime  int64  `json:"uptime"` // milliseconds
		Running bool   `json:"running"`
	}
	if err := b.getJSON(ctx, "nodes", url.Values{"columns": {"name,uptime,running"}}, &nodes); err != nil {
		return nil, b.fail("nodes", err)
	}
	out := make(map[string]time.Duration, len(nodes))
	for _, n := range nodes {
		if n.Running && n.Uptime > 0 {
			out[n.Name] = time.Duration(n.Uptime) * time.Millisecond
		}
	}
	return out, nil
}
