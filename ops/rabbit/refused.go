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
// 'redrive'" on 4.x, the same without the permission's name on 3.x — and NOT_ALLOWED (530) on
// connection.open for a vhost ("access to vhost 'billing' refused for user 'redrive'"; a vhost that
// does not exist is "vhost billing not found" instead). The broker's reason is the only place
// that names the resource and the permission, so it is read here, once.
var refusedReason = regexp.MustCompile(`^(?:ACCESS_REFUSED|NOT_ALLOWED) - (?:(configure|write|read) )?access to ` +
	`(?:(queue|exchange|topic) '(.*)' in vhost '(.*)'|vhost '(.*)') refused for user '(.*)'$`)

// refusal is a refusal of the console's RabbitMQ user, as refusedReason reads it.
type refusal struct {
	perm     string // configure, write or read
	kind     string // queue, exchange, topic; "" for a vhost
	name     string
	vhost    string
	user     string
	complete bool // the reason named all of the above
}

// parseRefusal reads an AMQP refusal's reason. A 3.x reason names no permission: a queue is
// refused to the console for reading it (browse, get, consume) and an exchange for publishing.
func parseRefusal(reason string) refusal {
	m := refusedReason.FindStringSubmatch(reason)
	if m == nil {
		return refusal{}
	}
	r := refusal{perm: m[1], kind: m[2], name: m[3], vhost: m[4], user: m[6], complete: true}
	if r.kind == "" {
		r.vhost = m[5]
	}
	if r.perm == "" {
		switch r.kind {
		case "queue":
			r.perm = "read"
		case "exchange", "topic":
			r.perm = "write"
		}
	}
	return r
}

// message is what a person reads of r: who may not do what, and the rabbitmqctl command that
// extends the user's pattern of that permission to the resource (the other patterns are left to
// the operator, as console doctor words it).
func (r refusal) message() string {
	if r.kind == "" {
		return fmt.Sprintf("RabbitMQ user %q may not open vhost %q: grant it permissions on the vhost "+
			"(rabbitmqctl set_permissions -p %s %s '<configure>' '<write>' '<read>'; console doctor lists what it needs)",
			r.user, r.vhost, rabbitmodel.ShellQuote(r.vhost), rabbitmodel.ShellQuote(r.user))
	}
	patterns := map[string]string{"configure": "'<configure>'", "write": "'<write>'", "read": "'<read>'"}
	patterns[r.perm] = rabbitmodel.ShellQuote("<" + r.perm + ">|^" + regexp.QuoteMeta(r.name) + "$")
	verb := map[string]string{"configure": "configure", "write": "write to", "read": "read"}[r.perm]
	return fmt.Sprintf("RabbitMQ user %q may not %s %s %q in vhost %q: grant it %s permission on the vhost "+
		"(extend its %s pattern to match %s: rabbitmqctl set_permissions -p %s %s %s %s %s)",
		r.user, verb, r.kind, r.name, r.vhost, r.perm, r.perm, r.name,
		rabbitmodel.ShellQuote(r.vhost), rabbitmodel.ShellQuote(r.user), patterns["configure"], patterns["write"], patterns["read"])
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
		if r := parseRefusal(amqpErr.Reason); r.complete {
			return &ops.Error{Kind: ops.ErrForbidden, Message: r.message(), Err: cause}, true
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
