package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
)

// A read RabbitMQ refuses to the console's own user is a 403 naming the user, the queue, the
// vhost and the permission to grant, not a 503 "try again" (which it was: nothing the operator
// waits for changes it). The user logs in and sees the vhost's queues but may read none of them:
// a browse (basic.consume) and a plan are refused with ACCESS_REFUSED. Without any permission in
// the vhost, the management API refuses it (401) and the answer names the vhost.
func TestRabbitReadRefusedIs403(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vhost, _, mgmt := deadLetteredOrders(t, ctx, 3, func(i int) amqp.Publishing {
		return amqp.Publishing{MessageId: fmt.Sprintf("m-%d", i), DeliveryMode: amqp.Persistent, Body: []byte(`{}`)}
	})
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	user, pw := "redrive_"+hex.EncodeToString(b), "pw_"+hex.EncodeToString(b)
	_, err := mgmt.PutUser(user, rabbithole.UserSettings{Password: pw, Tags: rabbithole.UserTags{"management"}})
	mustDo(t, err)
	t.Cleanup(func() { _, _ = mgmt.DeleteUser(user) })
	_, err = mgmt.UpdatePermissionsIn(vhost, user, rabbithole.Permissions{Configure: "", Write: "", Read: "^$"})
	mustDo(t, err)

	cfg := rabbittest.Config(t, vhost)
	u, err := url.Parse(string(cfg.URL))
	mustDo(t, err)
	u.User = url.UserPassword(user, pw)
	base := startConsole(t, fmt.Sprintf("auth: {mode: none}\nstore: {dsn: %q}\nrabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]\n",
		pgtest.NewDatabase(t), u.String(), cfg.ManagementURL, vhost))
	queue := base + "/api/v1/rabbitmq/main/queues/" + url.PathEscape(vhost) + "/orders.dlq"

	refused := func(t *testing.T, r response, want ...string) {
		t.Helper()
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || r.status != http.StatusForbidden || e.Error.Code != "forbidden" {
			t.Fatalf("%d %s; want a 403 (forbidden)", r.status, r.body)
		}
		for _, w := range want {
			if !strings.Contains(e.Error.Message, w) {
				t.Errorf("message %q does not say %q", e.Error.Message, w)
			}
		}
	}
	t.Run("ReadPermission", func(t *testing.T) {
		want := []string{fmt.Sprintf(`RabbitMQ user %q may not read queue "orders.dlq" in vhost %q: grant it read permission on the vhost`, user, vhost),
			fmt.Sprintf(`rabbitmqctl set_permissions -p '%s' '%s' '<configure>' '<write>' '<read>|^orders\.dlq$'`, vhost, user)}
		refused(t, do(t, nil, http.MethodGet, queue+"/messages?limit=5", "", ""), want...)
		plan := fmt.Sprintf(`{"source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10}}`, vhost)
		refused(t, do(t, nil, http.MethodPost, base+"/api/v1/replays/plan", "application/json", plan), want...)
		if r := do(t, nil, http.MethodGet, base+"/rabbitmq/main/queues/"+url.PathEscape(vhost)+"/orders.dlq/messages?limit=5", "", ""); r.status != http.StatusForbidden ||
			!strings.Contains(r.body, "may not read queue") {
			t.Errorf("the messages page: %d", r.status)
		}
	})
	t.Run("NoPermissionsInTheVhost", func(t *testing.T) {
		_, err := mgmt.ClearPermissionsIn(vhost, user)
		mustDo(t, err)
		refused(t, do(t, nil, http.MethodGet, queue+"/messages?limit=5", "", ""),
			fmt.Sprintf(`RabbitMQ management user %q may not access vhost %q: grant it permissions on the vhost`, user, vhost),
			fmt.Sprintf(`rabbitmqctl set_permissions -p '%s' '%s'`, vhost, user))
	})
}
