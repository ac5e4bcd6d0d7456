package doctor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/waittest"
)

// TestKafkaTransactionalIDRights: DESCRIBE on transactional ids is checked by describing one
// nobody uses (Kafka checks the right before it looks the id up). With a transaction of
// listener-tx open on orders.DLT, a principal granted DESCRIBE on every transactional id passes
// and sees it named; one granted nothing fails with the kafka-acls command that fixes it, and is
// told the open transaction it cannot name.
func TestKafkaTransactionalIDRights(t *testing.T) {
	acl := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	base := []kfake.ACL{acl(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationAll), acl(kmsg.ACLResourceTypeGroup, "*", kmsg.ACLOperationDescribe)}
	k := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "orders.DLT"), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "granted", "pw", append(base, acl(kmsg.ACLResourceTypeTransactionalId, "*", kmsg.ACLOperationDescribe))...),
		kfake.User("PLAIN", "bare", "pw", base...))
	ctx := waittest.Context(t, time.Minute)
	admin := kfaketest.Client(t, k, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism()), kgo.TransactionalID("listener-tx"))
	if err := admin.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "orders.DLT", Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defer admin.EndTransaction(context.Background(), kgo.TryAbort) //nolint:errcheck // the test's end

	cfg := baseConfig(t, pgtest.NewDatabase(t))
	for _, u := range []string{"granted", "bare"} {
		cfg.Kafka = append(cfg.Kafka, configs.KafkaCluster{Name: u, Brokers: k.ListenAddrs(), DeadLetterTopics: []string{"*.DLT"},
			RequestTimeout: configs.Duration(5 * time.Second), SASL: &configs.SASL{Mechanism: "PLAIN", Username: u, Password: "pw"}})
	}
	rep := doctor.New(cfg, withSystems(doctor.Adapters{})).Run(context.Background())
	t.Log("\n" + text(rep))

	c := expect(t, rep, "kafka/granted", "transactional ids", doctor.OK)
	if !strings.Contains(c.Detail, "User:granted may describe every transactional id") || !strings.Contains(c.Detail, "1 transactional id listed") {
		t.Errorf("granted: %q", c.Detail)
	}
	c = expect(t, rep, "kafka/bare", "transactional ids", doctor.Failed,
		"kafka-acls.sh --bootstrap-server "+k.ListenAddrs()[0]+" --add --allow-principal User:bare --operation Describe --transactional-id '*'")
	if !strings.Contains(c.Detail, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED") || !strings.Contains(c.Detail, "orders.DLT[0] producer") {
		t.Errorf("bare: %q; want the refusal and the open transaction it cannot name", c.Detail)
	}
}
