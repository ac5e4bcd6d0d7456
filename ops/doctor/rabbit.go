package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// managementTags are the user tags that let the management API show every vhost's queues with
// their statistics: what the console's queue pages and sampler read.
var managementTags = []string{"monitoring", "administrator"}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (d *Doctor) checkRabbit(ctx context.Context, r *recorder, i int, rc configs.RabbitMQBroker) {
	key := fmt.Sprintf("rabbitmq[%d]", i)
	b, release, ok := adapter(r, d.ad.Rabbit, rc.Name, "check "+key, func() (RabbitBroker, error) {
		if d.ad.OpenRabbit == nil {
			return nil, fmt.Errorf("rabbitmq %s: the doctor was given no way to open it", rc.Name)
		}
		return d.ad.OpenRabbit(rc, d.cfg.MessageID)
	})
	if !ok {
		return
	}
	defer release()
	amqpUser, mgmtUser := b.Users()

	loggedIn := false
	for _, vh := range b.LoginVhosts() {
		err := b.CheckLogin(ctx, vh)
		reason, refused := b.AccessRefused(err)
		switch {
		case err == nil:
			loggedIn = true
			r.ok("amqp login "+vh, "%s logged in to vhost %s", amqpUser, vh)
		case refused:
			r.fail("amqp login "+vh, fmt.Sprintf("check the user and password in %s.url (rabbitmqctl authenticate_user %s '<password>')", key, amqpUser),
				"%s was refused: %s", amqpUser, reason)
		case b.BrokerClosed(err), errors.Is(err, ops.ErrNotFound):
			r.fail("amqp login "+vh, fmt.Sprintf("rabbitmqctl set_permissions -p %s %s '' '.*' '.*'", shellQuote(vh), amqpUser),
				"%s may not open vhost %s: %s", amqpUser, vh, short(err))
		default:
			r.fail("amqp login "+vh, fmt.Sprintf("check the host and port in %s.url and that RabbitMQ is reachable from the console", key),
				"cannot connect: %s", short(err))
		}
	}

	mgmtOK := false
	user, tags, err := b.Whoami(ctx)
	setTags := fmt.Sprintf("rabbitmqctl set_user_tags %s monitoring", mgmtUser)
	switch st := b.APIStatus(err); {
	case err == nil && slices.ContainsFunc(tags, func(t string) bool { return slices.Contains(managementTags, t) }):
		mgmtOK = true
		r.ok("management API", "%s has tags %s", user, strings.Join(tags, ", "))
	case err == nil:
		mgmtOK = true // it sees its own vhosts: the checks below still run
		if len(tags) > 0 {
			setTags = fmt.Sprintf("rabbitmqctl set_user_tags %s %s monitoring", user, strings.Join(tags, " "))
		}
		r.fail("management API", setTags, "%s has tags [%s], not monitoring: the console would see only the vhosts it has permissions in, without rates",
			user, strings.Join(tags, ", "))
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		r.fail("management API", fmt.Sprintf("%s (and check %s.management_user/management_password)", setTags, key),
			"%s refuses %s: a wrong password, or a user without the monitoring tag (%s)", rc.ManagementURL, mgmtUser, short(err))
	default:
		r.fail("management API", fmt.Sprintf("check %s.management_url and that the management plugin is enabled (rabbitmq-plugins enable rabbitmq_management)", key),
			"%s does not answer: %s", rc.ManagementURL, short(err))
	}
	if !mgmtOK {
		if loggedIn {
			r.warn("dead-letter queues", "", "not checked: the dead-letter queues are found through the management API")
		}
		return
	}
	// The management API answers 500 for a moment while it catches up with a new vhost or a busy
	// node: ask again briefly before calling it a failure.
	targets, err := b.DLQTargets(ctx)
	for try := 0; err != nil && errors.Is(err, ops.ErrUnavailable) && try < 5 && ctx.Err() == nil; try++ {
		time.Sleep(300 * time.Millisecond)
		targets, err = b.DLQTargets(ctx)
	}
	if err != nil {
		r.fail("dead-letter queues", "", "reading queues, exchanges and bindings failed: %s", short(err))
		return
	}
	if len(targets) == 0 {
		r.warn("dead-letter queues", "check "+key+".dead_letter_queues and "+key+".vhosts", "no dead-letter queue found in the watched vhosts")
		return
	}
	checkQuorumLimits(ctx, r, b, targets)
	perms, permErr := b.PermissionsOf(ctx, amqpUser)
	byVhost := map[string]rabbitmodel.Permission{}
	for _, p := range perms {
		byVhost[p.Vhost] = p
	}
	setPerms := func(vh string, p rabbitmodel.Permission, write, read string) string {
		w, rd := p.Write, p.Read
		if write != "" {
			w = extend(w, write)
		}
		if read != "" {
			rd = extend(rd, read)
		}
		return fmt.Sprintf("rabbitmqctl set_permissions -p %s %s %s %s %s", shellQuote(vh), amqpUser, shellQuote(p.Configure), shellQuote(w), shellQuote(rd))
	}
	probed := map[string]bool{}
	for _, t := range targets {
		name := "read " + rabbitmodel.VhostName(t.Vhost, t.Queue)
		p, has := byVhost[t.Vhost]
		switch {
		case permErr != nil:
			r.warn(name, fmt.Sprintf("rabbitmqctl list_user_permissions %s (its read pattern must match %s)", amqpUser, t.Queue),
				"not checked: %s may not read %s's permissions (only an administrator may): %s", mgmtUser, amqpUser, short(permErr))
		case !has:
			r.fail(name, setPerms(t.Vhost, rabbitmodel.Permission{}, "", t.Queue), "%s has no permissions in vhost %s", amqpUser, t.Vhost)
		case matches(p.Read, t.Queue):
			r.ok(name, "%s may read %s (read pattern %s)", amqpUser, t.Queue, p.Read)
		default:
			r.fail(name, setPerms(t.Vhost, p, "", t.Queue), "%s's read pattern %q does not match %s: browsing and replaying it will fail", amqpUser, p.Read, t.Queue)
		}
		if len(t.Exchanges) == 0 {
			r.warn("write for "+rabbitmodel.VhostName(t.Vhost, t.Queue), "", "no queue that dead-letters into %s is bound to an exchange: a replay publishes to each message's x-death exchange, not checked", t.Queue)
		}
		for _, ex := range t.Exchanges {
			id := rabbitmodel.VhostName(t.Vhost, ex)
			if probed[id] {
				continue
			}
			probed[id] = true
			name := "write " + id
			if permErr == nil {
				switch {
				case !has:
					r.fail(name, setPerms(t.Vhost, rabbitmodel.Permission{}, ex, ""), "%s has no permissions in vhost %s", amqpUser, t.Vhost)
				case matches(p.Write, ex):
					r.ok(name, "%s may publish to %s (write pattern %s)", amqpUser, ex, p.Write)
				default:
					r.fail(name, setPerms(t.Vhost, p, ex, ""), "%s's write pattern %q does not match exchange %s: a replay of %s will fail", amqpUser, p.Write, ex, t.Queue)
				}
				continue
			}
			// The permissions cannot be read: a publish in a transaction, rolled back, asks the broker.
			err := b.ProbeWrite(ctx, t.Vhost, ex)
			reason, refused := b.AccessRefused(err)
			switch {
			case err == nil:
				r.ok(name, "%s may publish to %s (a publish in a transaction, rolled back)", amqpUser, ex)
			case refused:
				r.fail(name, fmt.Sprintf("extend the write pattern of %s in vhost %s to match %s: rabbitmqctl set_permissions -p %s %s '<configure>' '<write>|^%s$' '<read>'",
					amqpUser, t.Vhost, ex, shellQuote(t.Vhost), amqpUser, regexp.QuoteMeta(ex)),
					"%s may not publish to %s: a replay of %s will fail (%s)", amqpUser, ex, t.Queue, reason)
			default:
				r.warn(name, "", "not checked: %s", short(err))
			}
		}
	}
}

// matches applies a RabbitMQ permission pattern (unanchored, like Erlang's re:run) to name. "" and
// an invalid pattern match nothing. The default exchange is named amq.default in permissions.
func matches(pattern, name string) bool {
	if pattern == "" {
		return false
	}
	if name == "" {
		name = "amq.default"
	}
	re, err := regexp.Compile(pattern)
	return err == nil && re.MatchString(name)
}

// extend adds name, anchored, to a permission pattern.
func extend(pattern, name string) string {
	n := "^" + regexp.QuoteMeta(name) + "$"
	if pattern == "" || pattern == "^$" {
		return n
	}
	return pattern + "|" + n
}
