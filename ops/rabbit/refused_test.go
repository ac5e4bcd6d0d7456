package rabbit

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/rabbittest"
)

func TestParseRefusal(t *testing.T) {
	for _, tc := range []struct {
		reason string
		want   refusal
	}{ // as RabbitMQ 4.0 and 3.10 word them
		{"ACCESS_REFUSED - read access to queue 'orders.dlq' in vhost '/' refused for user 'redrive'",
			refusal{"read", "queue", "orders.dlq", "/", "redrive", true}},
		{"ACCESS_REFUSED - access to queue 'orders.dlq' in vhost 'billing' refused for user 'redrive'",
			refusal{"read", "queue", "orders.dlq", "billing", "redrive", true}},
		{"ACCESS_REFUSED - access to exchange 'orders' in vhost '/' refused for user 'redrive'",
			refusal{"write", "exchange", "orders", "/", "redrive", true}},
		{"ACCESS_REFUSED - configure access to queue 'a b' in vhost 'v' refused for user 'u'",
			refusal{"configure", "queue", "a b", "v", "u", true}},
		{"NOT_ALLOWED - access to vhost 'billing' refused for user 'redrive'",
			refusal{"", "", "", "billing", "redrive", true}},
		{"NOT_ALLOWED - vhost billing not found", refusal{}},
		{"ACCESS_REFUSED - queue 'x' in vhost 'y' in exclusive use", refusal{}},
	} {
		if got := parseRefusal(tc.reason); got != tc.want {
			t.Errorf("parseRefusal(%q) = %+v, want %+v", tc.reason, got, tc.want)
		}
	}
	msg := parseRefusal("ACCESS_REFUSED - access to queue 'o.dlq' in vhost 'it's' refused for user 'r'").message()
	if want := `rabbitmqctl set_permissions -p 'it'\''s' 'r' '<configure>' '<write>' '<read>|^o\.dlq$'`; !strings.Contains(msg, want) {
		t.Errorf("message %q does not hold %q", msg, want)
	}
}

// The console's AMQP user without permissions in a watched vhost: RabbitMQ refuses connection.open
// with NOT_ALLOWED, as it does for a vhost that does not exist; the first is ErrForbidden naming
// the user and the vhost, the second stays ErrNotFound.
func TestLoginRefusedIsForbidden(t *testing.T) {
	vhost, _, mgmt := rabbittest.NewVhost(t)
	user, pw := "redrive_"+strings.TrimPrefix(vhost, "t_"), "pw"
	if _, err := mgmt.PutUser(user, rabbithole.UserSettings{Password: pw, Tags: rabbithole.UserTags{"management"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = mgmt.DeleteUser(user) })
	cfg := rabbittest.Config(t, vhost)
	u, err := url.Parse(string(cfg.URL))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pw)
	cfg.URL, cfg.ManagementUser, cfg.ManagementPassword = configs.Secret(u.String()), user, configs.Secret(pw)
	b, err := New(cfg, testIDs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	err = b.CheckLogin(context.Background(), vhost)
	if want := `RabbitMQ user "` + user + `" may not open vhost "` + vhost + `"`; !errors.Is(err, ops.ErrForbidden) || !strings.Contains(ops.Message(err), want) {
		t.Errorf("login to a vhost without permissions: %v (%q); want ErrForbidden saying %q", err, ops.Message(err), want)
	}
	if err := b.CheckLogin(context.Background(), vhost+"-gone"); !errors.Is(err, ops.ErrNotFound) {
		t.Errorf("login to a vhost that does not exist: %v; want ErrNotFound", err)
	}
	// The management API refuses the vhost's queue with 401.
	_, err = b.Browse(context.Background(), vhost, "orders.dlq", 5)
	if want := `RabbitMQ management user "` + user + `" may not access vhost "` + vhost + `"`; !errors.Is(err, ops.ErrForbidden) || !strings.Contains(ops.Message(err), want) {
		t.Errorf("browse: %v (%q); want ErrForbidden saying %q", err, ops.Message(err), want)
	}
}
