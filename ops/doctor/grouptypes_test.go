package doctor_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// TestKafkaGroupTypeRights: DESCRIBE is checked on the groups of each type with that type's
// request. On a cluster holding a classic (billing), a KIP-848 (shipping) and a share group
// (mailer, reading jobs), a principal with DESCRIBE on every group but not on the topic jobs
// describes the classic and KIP-848 groups and is refused the share group (ShareGroupDescribe
// needs DESCRIBE on its topics): "groups (share)" fails with the topic ACL. A principal with
// DESCRIBE on shipping alone is not even shown billing and mailer, which it is configured to
// read: "groups" fails naming the group ACL.
func TestKafkaGroupTypeRights(t *testing.T) {
	acl := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	topics := []kfake.ACL{acl(kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLOperationDescribe),
		acl(kmsg.ACLResourceTypeTopic, "orders.DLT", kmsg.ACLOperationRead)}
	k := kfaketest.Cluster(t, kfake.SeedTopics(1, "orders", "orders.DLT", "jobs"), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "wide", "pw", append(topics, acl(kmsg.ACLResourceTypeGroup, "*", kmsg.ACLOperationDescribe))...),
		kfake.User("PLAIN", "narrow", "pw", append(topics, acl(kmsg.ACLResourceTypeGroup, "shipping", kmsg.ACLOperationDescribe))...))
	ctx := waittest.Context(t, time.Minute)
	as := kgo.SASL(plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism())
	admin := kfaketest.Client(t, k, as)
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("o")}, &kgo.Record{Topic: "jobs", Value: []byte("j")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	kfaketest.Commit(t, kadm.NewClient(admin), "billing", "orders", map[int32]int64{0: 1})
	shipping := kfaketest.Client(t, k, as, kgo.ConsumerGroup("shipping"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for shipping.PollFetches(ctx).NumRecords() == 0 && ctx.Err() == nil {
	}
	mailer := kfaketest.Client(t, k, as, kgo.ShareGroup("mailer"), kgo.ConsumeTopics("jobs"))
	admCl := kadm.NewClient(admin)
	waittest.Until(t, 30*time.Second, "the share member is assigned jobs", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		mailer.PollRecords(pctx, 1) // joins; no record comes (the group starts at the end)
		cancel()
		d, err := admCl.DescribeShareGroups(ctx, "mailer")
		return err == nil && len(d["mailer"].Members) == 1 && len(d["mailer"].Members[0].Assignment) == 1
	})

	cfg := baseConfig(t, pgtest.NewDatabase(t))
	for _, u := range []string{"wide", "narrow"} {
		cfg.Kafka = append(cfg.Kafka, configs.KafkaCluster{Name: u, Brokers: k.ListenAddrs(), DeadLetterTopics: []string{"*.DLT"},
			RequestTimeout: configs.Duration(5 * time.Second), SASL: &configs.SASL{Mechanism: "PLAIN", Username: u, Password: "pw"}})
		for _, g := range []string{"billing", "mailer"} {
			cfg.Consumers = append(cfg.Consumers, configs.Consumer{Name: u + "-" + g, Kafka: &configs.ConsumerKafka{Cluster: u, Group: g}})
		}
	}
	rep := doctor.New(cfg, withSystems(doctor.Adapters{})).Run(context.Background())
	t.Log("\n" + text(rep))

	bootstrap := k.ListenAddrs()[0]
	expect(t, rep, "kafka/wide", "groups (classic)", doctor.OK)
	expect(t, rep, "kafka/wide", "groups (consumer)", doctor.OK)
	expect(t, rep, "kafka/wide", "groups (share)", doctor.Failed,
		"kafka-acls.sh --bootstrap-server "+bootstrap+" --add --allow-principal User:wide --operation Describe --topic '*'")

	expect(t, rep, "kafka/narrow", "groups (consumer)", doctor.OK)
	expect(t, rep, "kafka/narrow", "groups", doctor.Failed,
		"kafka-acls.sh --bootstrap-server "+bootstrap+" --add --allow-principal User:narrow --operation Describe --group '*'")
}
