package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// principal is the Kafka principal the console authenticates as: User:<SASL user>, or
// User:ANONYMOUS on a plaintext or TLS listener without client certificates.
func principal(kc configs.KafkaCluster) string {
	if kc.SASL != nil && kc.SASL.Username != "" {
		return "User:" + kc.SASL.Username
	}
	return "User:ANONYMOUS"
}

func aclFix(kc configs.KafkaCluster, op, resource string) string {
	bootstrap := ""
	if len(kc.Brokers) > 0 {
		bootstrap = kc.Brokers[0]
	}
	return fmt.Sprintf("kafka-acls.sh --bootstrap-server %s --add --allow-principal %s --operation %s %s",
		bootstrap, principal(kc), op, resource)
}

// kafka is the cluster's adapter for a check of key (the cluster's and its registry's), as adapter.
func (d *Doctor) kafka(r *recorder, key string, kc configs.KafkaCluster) (KafkaCluster, func(), bool) {
	return adapter(r, d.ad.Kafka, kc.Name, "check "+key, func() (KafkaCluster, error) {
		if d.ad.OpenKafka == nil {
			return nil, fmt.Errorf("kafka %s: the doctor was given no way to open it", kc.Name)
		}
		return d.ad.OpenKafka(kc, d.cfg.MessageID)
	})
}

func (d *Doctor) checkKafka(ctx context.Context, r *recorder, i int, kc configs.KafkaCluster) {
	key := fmt.Sprintf("kafka[%d]", i)
	k, release, ok := d.kafka(r, key, kc)
	if !ok {
		return
	}
	defer release()
	acc, err := k.Access(ctx)
	if err != nil {
		r.fail("metadata", fmt.Sprintf("check %s.brokers (%s), its tls and sasl, and that the brokers' advertised listeners are reachable from the console",
			key, strings.Join(kc.Brokers, ", ")), "no broker answered: %s", short(err))
		return
	}
	r.ok("metadata", "%s, %s (cluster %s)", ops.Plural(int64(acc.Brokers), "broker"), ops.Plural(int64(len(acc.Topics)), "topic"), acc.ClusterID)

	var named []string
	for _, c := range d.cfg.Consumers {
		if c.Kafka != nil && c.Kafka.Cluster == kc.Name && c.Kafka.Group != "" && !slices.Contains(named, c.Kafka.Group) {
			named = append(named, c.Kafka.Group)
		}
	}
	ga, err := k.GroupAccess(ctx, named...)
	if err != nil {
		r.fail("groups", aclFix(kc, "Describe", "--group '*'"), "listing groups failed: %s", short(err))
	} else {
		checkGroupTypes(r, kc, k, ga, named)
	}
	checkTransactions(ctx, r, kc, k)

	var dlts []string
	for t, ta := range acc.Topics {
		if !ta.Internal && k.IsDeadLetterTopic(t) {
			dlts = append(dlts, t)
		}
	}
	sort.Strings(dlts)
	if len(dlts) == 0 {
		r.warn("dead-letter topics", "check "+key+".dead_letter_topics", "no topic the console may describe matches %s",
			strings.Join(kc.DeadLetterTopics, ", "))
	}
	aclsAnswered := true // until a DescribeACLs says otherwise: asked once per cluster then
	right := func(topic, op string) {
		name := "read " + topic
		if op == "Write" {
			name = "produce " + topic
		}
		ta, listed := acc.Topics[topic]
		fix := aclFix(kc, op, "--topic "+topic)
		switch {
		case listed && k.TopicDenied(ta.Err):
			r.fail(name, fix, "%s may not even describe %s", principal(kc), topic)
			return
		case acc.OpsKnown && listed:
			allowed := ta.Read
			if op == "Write" {
				allowed = ta.Write
			}
			if allowed {
				r.ok(name, "%s may %s %s (authorized operations)", principal(kc), strings.ToLower(op), topic)
			} else {
				r.fail(name, fix, "%s may not %s %s", principal(kc), strings.ToLower(op), topic)
			}
			return
		case !aclsAnswered:
			r.warn(name, "", "not checked: %s", kafkamodel.ErrACLsNotAnswered)
			return
		}
		acls, err := k.TopicACLs(ctx, topic)
		switch {
		case errors.Is(err, kafkamodel.ErrACLsNotAnswered):
			aclsAnswered = false
			r.warn(name, "", "not checked: %s", kafkamodel.ErrACLsNotAnswered)
		case err != nil:
			r.warn(name, "", "not checked: %s", short(err))
		case len(acls) == 0:
			r.warn(name, fix, "no ACL names %s: allowed only when the brokers set allow.everyone.if.no.acl.found=true", topic)
		case kafkamodel.ACLsAllow(acls, principal(kc), strings.ToUpper(op)):
			r.ok(name, "%s may %s %s (ACLs)", principal(kc), strings.ToLower(op), topic)
		default:
			r.fail(name, fix, "no ACL lets %s %s %s", principal(kc), strings.ToLower(op), topic)
		}
	}
	for _, t := range dlts {
		right(t, "Read")
	}
	// The topics a replay writes to: what each dead-letter topic's name says it came from, and the
	// consumers' configured topics.
	var originals []string
	for _, t := range dlts {
		if o := k.OriginalTopicOf(t); o != "" && !slices.Contains(originals, o) && !k.IsDeadLetterTopic(o) {
			originals = append(originals, o)
		}
	}
	for _, c := range d.cfg.Consumers {
		if c.Kafka != nil && c.Kafka.Cluster == kc.Name {
			for _, t := range c.Kafka.Topics {
				if !slices.Contains(originals, t) {
					originals = append(originals, t)
				}
			}
		}
	}
	sort.Strings(originals)
	for _, t := range originals {
		if _, ok := acc.Topics[t]; !ok {
			r.warn("produce "+t, "", "topic %s does not exist (or is not visible): a replay of its dead letters would fail", t)
			continue
		}
		right(t, "Write")
	}
}

func (d *Doctor) checkRegistry(ctx context.Context, r *recorder, i int, kc configs.KafkaCluster) {
	key := fmt.Sprintf("kafka[%d].schema_registry", i)
	k, release, ok := d.kafka(r, key, kc)
	if !ok {
		return
	}
	defer release()
	rc, err := k.CheckSchemaRegistry(ctx)
	switch {
	case err == nil:
		r.ok("subjects", "%s answers: %d subjects", kc.SchemaRegistry.URL, rc.Subjects)
	case rc.Status == http.StatusUnauthorized || rc.Status == http.StatusForbidden:
		r.fail("subjects", fmt.Sprintf("set %s.username and %s.password to a user that may read subjects and schemas", key, key),
			"%s refuses the credentials (HTTP %d)", kc.SchemaRegistry.URL, rc.Status)
	default:
		r.fail("subjects", fmt.Sprintf("check %s.url and %s.tls", key, key), "%s", short(err))
	}
}

// groupTypes are the group types the console reads, with what each is described with.
var groupTypes = []struct{ typ, request string }{
	{kafkamodel.GroupClassic, "DescribeGroups"},
	{kafkamodel.GroupConsumer, "ConsumerGroupDescribe (KIP-848)"},
	{kafkamodel.GroupShare, "ShareGroupDescribe (KIP-932)"},
}

// checkGroupTypes reports DESCRIBE on the groups of each type: "groups (classic)", "groups
// (consumer)", "groups (share)", each failing with the ACL that lets the console describe the
// groups it could not; a configured group Kafka does not list (it hides groups the principal may
// not describe) is told under "groups", with its own ACL.
func checkGroupTypes(r *recorder, kc configs.KafkaCluster, k KafkaCluster, ga kafkamodel.GroupAccess, named []string) {
	fixFor := func(groups []string) string {
		if len(groups) == 1 {
			return aclFix(kc, "Describe", "--group '"+groups[0]+"'")
		}
		return aclFix(kc, "Describe", "--group '*'")
	}
	for _, gt := range groupTypes {
		name := "groups (" + gt.typ + ")"
		var listed, denied, topicDenied []string
		var why []string
		for _, g := range ga.Listed {
			if ga.Types[g] != gt.typ {
				continue
			}
			listed = append(listed, g)
			err, described := ga.Described[g]
			switch {
			case !described || err == nil:
			case k.TopicDenied(err):
				topicDenied = append(topicDenied, g)
				why = append(why, fmt.Sprintf("%s (%s)", g, short(err)))
			default:
				denied = append(denied, g)
				why = append(why, fmt.Sprintf("%s (%s)", g, short(err)))
			}
		}
		switch {
		case len(denied) > 0:
			r.fail(name, fixFor(denied), "%s listed; %s failed for %s", ops.Plural(int64(len(listed)), gt.typ+" group"), gt.request, strings.Join(why, ", "))
		case len(topicDenied) > 0:
			// ConsumerGroupDescribe and the share describes also need DESCRIBE on the topics the
			// members are assigned.
			r.fail(name, aclFix(kc, "Describe", "--topic '*'"), "%s listed; %s refused for the topics of %s", ops.Plural(int64(len(listed)), gt.typ+" group"),
				gt.request, strings.Join(why, ", "))
		case len(listed) == 0:
			r.ok(name, "none visible (Kafka lists only the groups the principal may describe)")
		default:
			r.ok(name, "%s listed and described with %s", ops.Plural(int64(len(listed)), gt.typ+" group"), gt.request)
		}
	}
	// Configured groups Kafka did not list: not there, or hidden from the principal.
	var hidden, missing []string
	for _, g := range named {
		if _, ok := ga.Types[g]; ok {
			continue
		}
		switch err := ga.Described[g]; {
		case err == nil, k.GroupMissing(err):
			missing = append(missing, g)
		default:
			hidden = append(hidden, fmt.Sprintf("%s (%s)", g, short(err)))
		}
	}
	switch {
	case len(hidden) > 0:
		r.fail("groups", fixFor(hiddenNames(hidden)), "configured groups not listed and not described: %s", strings.Join(hidden, ", "))
	case len(missing) > 0:
		r.warn("groups", "", "configured groups the cluster does not have (yet): %s", strings.Join(missing, ", "))
	}
}

// hiddenNames strips the " (reason)" of hidden groups' descriptions.
func hiddenNames(hidden []string) []string {
	out := make([]string, len(hidden))
	for i, h := range hidden {
		out[i], _, _ = strings.Cut(h, " (")
	}
	return out
}
