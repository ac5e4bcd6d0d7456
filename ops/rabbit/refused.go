package rabbit

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// refusedReason is how RabbitMQ words a refusal of the console's AMQP user: ACCESS_REFUSED (403)
// on a queue or an exchange — "read access to queue 'orders.dlq' in vhost '/' refused for user
// 'redrive'" on 4.x, the same without the permission's name on 3.x — or on a routing key a topic
// permission refuses ("access to topic 'order.eu' in exchange 'orders' in vhost '/' refused for
// user 'redrive'", again with "write " before it on 4.x), and NOT_ALLOWED (530) on connection.open
// for a vhost ("access to vhost 'billing' refused for user 'redrive'"; a vhost that does not exist
// is "vhost billing not found" instead). The broker's reason is the only place that names the
// resource and the permission, so it is read here, once.
var refusedReason = regexp.MustCompile(`^(?:ACCESS_REFUSED|NOT_ALLOWED) - (?:(configure|write|read) )?access to ` +
	`(?:(queue|exchange) '(.*)' in vhost '(.*)'|topic '(.*)' in exchange '(.*)' in vhost '(.*)'|vhost '(.*)') ` +
	`refused for user '(.*)'$`)

// refusal is a refusal of the console's RabbitMQ user, as refusedReason reads it.
type refusal struct {
	perm     string // configure, write or read
	kind     string // queue, exchange, topic (a topic permission of exchange name); "" for a vhost
	name     string
	vhost    string
	user     string
	complete bool // the reason named all of the above
}

// parseRefusal reads an AMQP refusal's reason. A 3.x reason names no permission: a queue is
// refused to the console for reading it (browse, get, consume) and an exchange for publishing.
func parseRefusal(reason string) refusal {
	r, _ := parseRefusalKey(reason)
	return r
}

// parseRefusalKey is parseRefusal with the routing key a topic permission refused (kind topic).
func parseRefusalKey(reason string) (refusal, string) {
	m := refusedReason.FindStringSubmatchIndex(reason)
	if m == nil {
		return refusal{}, ""
	}
	group := func(g int) (string, bool) {
		if m[2*g] < 0 {
			return "", false
		}
		return reason[m[2*g]:m[2*g+1]], true
	}
	r := refusal{complete: true}
	r.perm, _ = group(1)
	r.user, _ = group(9)
	var key string
	if kind, ok := group(2); ok {
		r.kind = kind
		r.name, _ = group(3)
		r.vhost, _ = group(4)
	} else if k, ok := group(5); ok {
		r.kind, key = "topic", k
		r.name, _ = group(6)
		r.vhost, _ = group(7)
	} else {
		r.vhost, _ = group(8)
	}
	if r.perm == "" {
		switch r.kind {
		case "queue":
			r.perm = "read"
		case "exchange", "topic":
			r.perm = "write"
		}
	}
	return r, key
}

// message is what a person reads of r: who may not do what, and the rabbitmqctl command that
// extends the user's pattern of that permission to the resource (the other patterns are left to
// the operator, as console doctor words it).
func (r refusal) message() string { return r.words("", nil) }

// words is message for a refusal the console knows more of than the broker's reason says: key, the
// routing key a topic permission refused (kind topic), and have, the user's patterns as the
// management API gave them (configure, write and read; for a topic, the write and read of its topic
// permission on the exchange), which the command then shows and extends instead of placeholders.
func (r refusal) words(key string, have map[string]string) string {
	if r.kind == "" {
		return fmt.Sprintf("RabbitMQ user %q may not open vhost %q: grant it permissions on the vhost "+
			"(rabbitmqctl set_permissions -p %s %s '<configure>' '<write>' '<read>'; console doctor lists what it needs)",
			r.user, r.vhost, rabbitmodel.ShellQuote(r.vhost), rabbitmodel.ShellQuote(r.user))
	}
	pattern := func(perm string) string {
		if p, ok := have[perm]; ok {
			return rabbitmodel.ShellQuote(p)
		}
		return rabbitmodel.ShellQuote("<" + perm + ">")
	}
	// The refused permission's pattern, widened to match what was refused too.
	widened := func(name string) string {
		n := "^" + regexp.QuoteMeta(name) + "$"
		p, ok := have[r.perm]
		switch {
		case !ok:
			p = "<" + r.perm + ">"
		case p == "" || p == "^$": // matches nothing: replaced, not widened
			return rabbitmodel.ShellQuote(n)
		}
		return rabbitmodel.ShellQuote(p + "|" + n)
	}
	if r.kind == "topic" {
		patterns := map[string]string{"write": pattern("write"), "read": pattern("read")}
		patterns[r.perm] = widened(key)
		verb := map[string]string{"write": "publish to", "read": "read from"}[r.perm]
		return fmt.Sprintf("RabbitMQ user %q may not %s topic exchange %q in vhost %q with routing key %q: its topic permission "+
			"on the exchange refuses the key; grant it (extend its topic %s pattern to match %s: "+
			"rabbitmqctl set_topic_permissions -p %s %s %s %s %s)",
			r.user, verb, r.name, r.vhost, key, r.perm, key,
			rabbitmodel.ShellQuote(r.vhost), rabbitmodel.ShellQuote(r.user), rabbitmodel.ShellQuote(r.name), patterns["write"], patterns["read"])
	}
	patterns := map[string]string{"configure": pattern("configure"), "write": pattern("write"), "read": pattern("read")}
	patterns[r.perm] = widened(r.name)
	verb := map[string]string{"configure": "configure", "write": "write to", "read": "read"}[r.perm]
	return fmt.Sprintf("RabbitMQ user %q may not %s %s %q in vhost %q: grant it %s permission on the vhost "+
		"(extend its %s pattern to match %s: rabbitmqctl set_permissions -p %s %s %s %s %s)",
		r.user, verb, r.kind, r.name, r.vhost, r.perm, r.perm, r.name,
		rabbitmodel.ShellQuote(r.vhost), rabbitmodel.ShellQuote(r.user), patterns["configure"], patterns["write"], patterns["read"])
}

// refusedPublish is the error of a batch whose publishing channel the broker closed with
// ACCESS_REFUSED (403): the console's AMQP user may not publish where one of its messages goes
// (write permission on the exchange, a topic permission on the routing key, an internal
// exchange). It is an ops.ErrForbidden, never the ErrUnavailable of a channel lost: the close
// leaves the batch's outcome unknown — the publishes before the refused one may have been taken —
// so its claims stay in flight, and a job that retried it sent those again on each try only to
// meet the same refusal, for ever. The job stops failed instead (replay's run), saying who lacks
// what. Cursor.checkRights refuses such messages one by one before publishing wherever the
// management API lets it read the permissions; this is for where it could not.
func (b *Broker) refusedPublish(op string, closed *amqp.Error) error {
	what := fmt.Sprintf("RabbitMQ refused a publish of the console's user (%s)", closed.Reason)
	if r, key := parseRefusalKey(closed.Reason); r.complete {
		what = r.words(key, nil)
	}
	return &ops.Error{Kind: ops.ErrForbidden, Err: fmt.Errorf("rabbitmq %s: %s: %w", b.name, op, closed),
		Message: what + ". The broker closed the channel the replay publishes on, so whether the messages published " +
			"before it in the same batch were taken is unknown: the job stops rather than send them again (they stay in " +
			"the dead-letter queue). The console checks permissions before publishing when its management user may read " +
			"them (an administrator); grant the permission, then plan the replay again"}
}

// refused translates a refusal of the console's own RabbitMQ users into ops.ErrForbidden (403)
// naming the user, the resource and the permission it lacks: an AMQP ACCESS_REFUSED, or the
// management API's 401/403 for a vhost its user may not access. ok is false for anything else —
// a failed login among them (AMQP or management), which is a configuration error, not a permission.
func (b *Broker) refused(op, full string, err error) (_ error, ok bool) {
	cause := fmt.Errorf("rabbitmq %s: %s: %w", b.name, full, err)
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.AccessRefused {
		// A failed login is an ACCESS_REFUSED too ("Login was refused using authentication
		// mechanism PLAIN"): a configuration error, left to the default.
		if r, key := parseRefusalKey(amqpErr.Reason); r.complete {
			return &ops.Error{Kind: ops.ErrForbidden, Message: r.words(key, nil), Err: cause}, true
		}
		return nil, false
	}
	var status int
	var reason, vhost string
	var api *apiError
	var rh rabbithole.ErrorResponse
	switch {
	case errors.As(err, &api):
		status, reason, vhost = api.Status, api.Reason, vhostOfPath(api.Path)
	case errors.As(err, &rh):
		status, reason = rh.StatusCode, rh.Reason
	default:
		return nil, false
	}
	// The management API answers 401 both to a failed login and to a user without permissions on
	// the vhost it asks about; only the reason tells them apart.
	if status != http.StatusForbidden && !(status == http.StatusUnauthorized && strings.Contains(reason, "virtual host")) {
		return nil, false
	}
	where, vh := "the vhost it asked about", "<vhost>"
	if vhost != "" {
		where, vh = fmt.Sprintf("vhost %q", vhost), rabbitmodel.ShellQuote(vhost)
	}
	return &ops.Error{Kind: ops.ErrForbidden, Err: cause, Message: fmt.Sprintf("rabbitmq broker %q: %s: RabbitMQ management user %q "+
		"may not access %s: grant it permissions on the vhost (rabbitmqctl set_permissions -p %s %s '<configure>' '<write>' '<read>')",
		b.name, op, b.user, where, vh, rabbitmodel.ShellQuote(b.user))}, true
}

// vhostOfPath is the vhost a management API path (escaped, as getJSON takes it) names: the second
// segment of queues/, exchanges/, bindings/ and policies/ paths; "" for the others.
func vhostOfPath(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 {
		return ""
	}
	switch parts[0] {
	case "queues", "exchanges", "bindings", "policies", "operator-policies", "vhosts":
		v, err := url.PathUnescape(parts[1])
		if err != nil {
			return ""
		}
		return v
	}
	return ""
}
