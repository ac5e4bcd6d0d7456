package rabbit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
)

// Users returns the AMQP user (from the URL: it reads and republishes messages) and the
// management API user (it reads queues and topology); they are often the same.
func (b *Broker) Users() (amqpUser, managementUser string) {
	u, err := amqp.ParseURI(b.amqpURL)
	if err == nil {
		amqpUser = u.Username
	}
	return amqpUser, b.user
}

// LoginVhosts are the vhosts the console opens AMQP connections to: the watched ones, or the
// URL's vhost when every vhost is watched.
func (b *Broker) LoginVhosts() []string {
	if len(b.vhosts) > 0 {
		return slices.Clone(b.vhosts)
	}
	u, err := amqp.ParseURI(b.amqpURL)
	if err != nil || u.Vhost == "" {
		return []string{"/"}
	}
	return []string{u.Vhost}
}

// CheckLogin opens (or reuses) the console's AMQP connection to vhost: the URL's user logs in.
func (b *Broker) CheckLogin(ctx context.Context, vhost string) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	if _, err := b.conn(ctx, vhost); err != nil {
		return b.fail("amqp login", err)
	}
	return nil
}

// APIStatus is the HTTP status of a refused management API call (401, 403, …); 0 when err is not
// one.
func APIStatus(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// Whoami asks the management API who the management user is and which tags it has.
func (b *Broker) Whoami(ctx context.Context) (user string, tags []string, err error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var w struct {
		Name string `json:"name"`
		Tags any    `json:"tags"` // a list since 3.9, a comma-separated string before
	}
	if err := b.getJSON(ctx, "whoami", nil, &w); err != nil {
		return "", nil, b.fail("whoami", err)
	}
	switch t := w.Tags.(type) {
	case string:
		tags = append(tags, splitComma(t)...)
	case []any:
		for _, s := range t {
			if s, ok := s.(string); ok {
				tags = append(tags, s)
			}
		}
	}
	return w.Name, tags, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if f := s[start:i]; f != "" {
				out = append(out, f)
			}
			start = i + 1
		}
	}
	return out
}

// PermissionsOf lists user's vhost permissions through the management API. RabbitMQ answers only
// an administrator: otherwise the error's APIStatus is 401 or 403.
func (b *Broker) PermissionsOf(ctx context.Context, user string) ([]Permission, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var ps []struct {
		Vhost     string `json:"vhost"`
		Configure string `json:"configure"`
		Write     string `json:"write"`
		Read      string `json:"read"`
	}
	if err := b.getJSON(ctx, "users/"+url.PathEscape(user)+"/permissions", nil, &ps); err != nil {
		return nil, b.fail("permissions of "+user, err)
	}
	out := make([]Permission, 0, len(ps))
	for _, p := range ps {
		out = append(out, Permission{Vhost: p.Vhost, Configure: p.Configure, Write: p.Write, Read: p.Read})
	}
	return out, nil
}

// DLQTargets reads the topology and, for every dead-letter queue of the watched vhosts, the
// exchanges bound to its source queues. Errors are those of Topology.
func (b *Broker) DLQTargets(ctx context.Context) ([]DLQTarget, error) {
	t, err := b.Topology(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var out []DLQTarget
	for ref := range t.DLQs {
		out = append(out, DLQTarget{Vhost: ref.Vhost, Queue: ref.Name})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Vhost != out[j].Vhost {
			return out[i].Vhost < out[j].Vhost
		}
		return out[i].Queue < out[j].Queue
	})
	for i := range out {
		seen := map[string]bool{}
		for _, e := range t.Edges {
			if e.FromVhost != out[i].Vhost || !slices.Contains(e.ToQueues, out[i].Queue) || t.RetryQueues[QueueRef{Vhost: e.FromVhost, Name: e.FromQueue}] {
				continue
			}
			bs, err := b.queueBindings(ctx, e.FromVhost, e.FromQueue)
			if err != nil {
				return nil, b.fail("bindings of "+e.FromQueue, err)
			}
			for _, bd := range bs {
				if bd.Source != "" && !seen[bd.Source] { // every queue is bound to the default exchange
					seen[bd.Source] = true
					out[i].Exchanges = append(out[i].Exchanges, bd.Source)
				}
			}
		}
		sort.Strings(out[i].Exchanges)
	}
	return out, nil
}

// queueBinding is one element of a management bindings list.
type queueBinding struct {
	Source          string `json:"source"`
	Vhost           string `json:"vhost"`
	Destination     string `json:"destination"`
	DestinationType string `json:"destination_type"`
}

// queueBindings lists the bindings of a queue: GET /api/queues/{vhost}/{queue}/bindings, or for a
// vhost or queue named "." or ".." (dotSegment) the bindings list filtered to it.
func (b *Broker) queueBindings(ctx context.Context, vhost, queue string) ([]queueBinding, error) {
	var bs []queueBinding
	if !dotSegment(vhost) && !dotSegment(queue) {
		err := b.getJSON(ctx, "queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue)+"/bindings", nil, &bs)
		return bs, err
	}
	p := "bindings"
	if !dotSegment(vhost) {
		p += "/" + url.PathEscape(vhost)
	}
	if err := b.getJSON(ctx, p, nil, &bs); err != nil {
		return nil, err
	}
	out := bs[:0]
	for _, bd := range bs {
		if bd.Vhost == vhost && bd.Destination == queue && bd.DestinationType == "queue" {
			out = append(out, bd)
		}
	}
	return out, nil
}

// ProbeWrite checks that the AMQP user may publish to exchange in vhost without publishing
// anything: it publishes inside a transaction (tx.select) and rolls it back. RabbitMQ checks the
// write permission and that the exchange exists when the publish arrives, and routes a
// transaction's messages only on commit, so the rollback discards the probe unseen. A refusal is
// an *amqp.Error with code 403 (ACCESS_REFUSED) or 404 (no such exchange).
func (b *Broker) ProbeWrite(ctx context.Context, vhost, exchange string) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	ch, err := b.channel(ctx, vhost)
	if err != nil {
		return b.fail("write probe", err)
	}
	defer ch.Close()
	// A refused publish is answered by the broker closing the channel, asynchronously: the
	// rollback then fails either with that close's reason or, when the close arrived first,
	// with a bare "channel/connection is not open". The close notification holds the reason
	// in both cases.
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Tx(); err != nil {
		return fmt.Errorf("write probe: tx.select: %w", err)
	}
	err = ch.PublishWithContext(ctx, exchange, "redrive.doctor.probe", false, false,
		amqp.Publishing{Body: []byte("redrive doctor: rolled back, never routed")})
	if err == nil {
		err = ch.TxRollback()
	}
	if err != nil {
		select {
		case reason := <-closed:
			if reason != nil {
				return reason
			}
		case <-time.After(time.Second):
		}
	}
	return err
}

// publishRights says, before a Cursor publishes, which of its messages the console's AMQP user may
// not publish where they go: RabbitMQ answers a refused publish by closing the channel (403
// ACCESS_REFUSED), which leaves the whole batch's outcome unknown (refusedPublish). It reads the
// user's permissions in the vhost through the management API once per cursor — its permissions,
// its topic permissions, and the type of an exchange a topic permission names — and applies them
// as RabbitMQ does (rabbit_access_control, rabbit_auth_backend_internal:check_resource_access and
// check_topic_access):
//   - the exchange's name ("" is checked as amq.default) must match the write pattern, a regular
//     expression matched anywhere in it; an empty pattern matches nothing;
//   - on a topic exchange the user has a topic permission for, the routing key must match that
//     permission's write pattern once {username} and {vhost} in it are replaced, as they are, by the
//     user's name and the vhost. {client_id} stays as written: RabbitMQ fills it in only for a
//     plugin's connection (rabbit_channel:extract_variable_map_from_amqp_params), never for an AMQP
//     0-9-1 client's. Without a topic permission every key is allowed.
//
// Where it cannot tell it refuses nothing, and the broker's own check decides (refusedPublish): the
// management user may not read permissions (only an administrator may), the user has no entry in
// the vhost (so another authorization backend let the cursor's connection in), a pattern Go's
// regexp does not compile (RabbitMQ's are PCRE), a name or key outside printable ASCII (PCRE
// matches bytes there and Go runes, and its $ matches before a final newline).
type publishRights struct {
	b           *Broker
	vhost, user string
	asked       bool
	write       *regexp.Regexp       // nil: not known
	have        map[string]string    // the user's patterns, for the message
	topics      map[string]topicRule // by exchange
	topic       map[string]bool      // exchanges asked for their type: a topic exchange?
}

// topicRule is a topic permission: its write pattern expanded and compiled (nil: not compiled),
// and its patterns as set, for the message.
type topicRule struct {
	write *regexp.Regexp
	have  map[string]string
}

// publishRightsIn is a publishRights of the console's AMQP user in vhost, which asks the management
// API when it is first used.
func (b *Broker) publishRightsIn(vhost string) *publishRights {
	user, _ := b.Users()
	return &publishRights{b: b, vhost: vhost, user: user}
}

// refused is the error of a message bound for exchange with routingKey when the user may not publish
// it there: an ops.ErrForbidden saying who lacks which permission and what to grant. nil when it
// may, or when the rights cannot tell.
func (p *publishRights) refused(ctx context.Context, exchange, routingKey string) error {
	if !p.asked {
		p.ask(ctx)
	}
	name := exchange
	if name == "" {
		name = "amq.default"
	}
	if p.write != nil && printable(name) && !p.write.MatchString(name) {
		r := refusal{perm: "write", kind: "exchange", name: name, vhost: p.vhost, user: p.user, complete: true}
		return &ops.Error{Kind: ops.ErrForbidden, Message: r.words("", p.have)}
	}
	t, ok := p.topics[exchange]
	if !ok || t.write == nil || !printable(routingKey) || !p.isTopic(ctx, exchange) || t.write.MatchString(routingKey) {
		return nil
	}
	r := refusal{perm: "write", kind: "topic", name: exchange, vhost: p.vhost, user: p.user, complete: true}
	return &ops.Error{Kind: ops.ErrForbidden, Message: r.words(routingKey, t.have)}
}

// ask reads the user's permissions and topic permissions in the vhost; an error leaves what it
// would have read unknown.
func (p *publishRights) ask(ctx context.Context) {
	p.asked = true
	if p.user == "" || dotSegment(p.vhost) { // a path segment "." or ".." would name another resource
		return
	}
	ctx, cancel := p.b.bound(ctx)
	defer cancel()
	perm, err := call(ctx, func() (rabbithole.PermissionInfo, error) { return p.b.rh.GetPermissionsIn(p.vhost, p.user) })
	if err != nil {
		return
	}
	p.have = map[string]string{"configure": perm.Configure, "write": perm.Write, "read": perm.Read}
	p.write = permissionPattern(perm.Write)
	tps, err := call(ctx, func() ([]rabbithole.TopicPermissionInfo, error) { return p.b.rh.GetTopicPermissionsIn(p.vhost, p.user) })
	if err != nil { // 404: the user has none
		return
	}
	p.topics = make(map[string]topicRule, len(tps))
	for _, tp := range tps {
		// As rabbit_auth_backend_internal:expand_topic_permission: the empty pattern first becomes
		// ^$, then the variables are replaced by their values as they are (not escaped), in the
		// order of the variable map's keys.
		w := tp.Write
		if w == "" {
			w = "^$"
		}
		w = strings.ReplaceAll(w, "{username}", p.user)
		w = strings.ReplaceAll(w, "{vhost}", p.vhost)
		p.topics[tp.Exchange] = topicRule{write: permissionPattern(w), have: map[string]string{"write": tp.Write, "read": tp.Read}}
	}
}

// isTopic reports whether exchange is a topic exchange (only those have their routing keys
// checked), asking the management API once per exchange; false when it cannot tell.
func (p *publishRights) isTopic(ctx context.Context, exchange string) bool {
	if is, ok := p.topic[exchange]; ok {
		return is
	}
	is := false
	if !dotSegment(exchange) {
		ctx, cancel := p.b.bound(ctx)
		x, err := call(ctx, func() (*rabbithole.DetailedExchangeInfo, error) { return p.b.rh.GetExchange(p.vhost, exchange) })
		cancel()
		is = err == nil && x != nil && x.Type == amqp.ExchangeTopic
	}
	if p.topic == nil {
		p.topic = map[string]bool{}
	}
	p.topic[exchange] = is
	return is
}

// permissionPattern compiles a RabbitMQ permission pattern as Go's regexp reads it: "" matches
// nothing (RabbitMQ reads it as ^$); nil when it does not compile.
func permissionPattern(p string) *regexp.Regexp {
	if p == "" {
		p = "^$"
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil
	}
	return re
}

// printable reports whether s is printable ASCII only, where a PCRE pattern and Go's regexp match
// alike.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
