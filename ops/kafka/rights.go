package kafka

import (
	"context"
	"errors"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/kafka/schema"
)

// Access and TopicAccess are kafkamodel's: the doctor reads them without this adapter.
type (
	Access      = kafkamodel.Access
	TopicAccess = kafkamodel.TopicAccess
)

// Access issues the metadata request for all topics with their authorized operations. Errors wrap
// ops.ErrUnavailable: no broker answered.
func (c *Cluster) Access(ctx context.Context) (Access, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return Access{}, c.fail("metadata", err)
	}
	a := Access{Brokers: len(resp.Brokers), Topics: map[string]TopicAccess{}}
	if resp.ClusterID != nil {
		a.ClusterID = *resp.ClusterID
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		ta := TopicAccess{Err: kerr.ErrorForCode(t.ErrorCode), Internal: t.IsInternal}
		if t.AuthorizedOperations != math.MinInt32 {
			a.OpsKnown = true
			has := func(op kmsg.ACLOperation) bool { return t.AuthorizedOperations&(1<<int32(op)) != 0 }
			ta.Read, ta.Write = has(kmsg.ACLOperationRead), has(kmsg.ACLOperationWrite)
			ta.Describe = has(kmsg.ACLOperationDescribe) || ta.Read || ta.Write
		} else {
			ta.Describe = ta.Err == nil
		}
		a.Topics[*t.Topic] = ta
	}
	return a, nil
}

// IsDeadLetterTopic reports whether topic matches the cluster's dead_letter_topics patterns.
func (c *Cluster) IsDeadLetterTopic(topic string) bool { return c.isDeadLetterTopic(topic) }

// OriginalTopicOf guesses the topic a dead-letter topic's messages came from by its name: what the
// pattern's "*" stands for (orders.DLT → orders for *.DLT). "" when no single-star pattern
// matches. A replay writes to the topic in each record's original-topic header; this is the topic
// the doctor checks, as the records are not read.
func (c *Cluster) OriginalTopicOf(dlt string) string {
	for _, p := range c.patterns {
		pre, suf, ok := strings.Cut(p, "*")
		if !ok || strings.ContainsAny(pre+suf, "*?[") {
			continue
		}
		if m, _ := path.Match(p, dlt); m && len(dlt) > len(pre)+len(suf) {
			return dlt[len(pre) : len(dlt)-len(suf)]
		}
	}
	return ""
}

// GroupAccess is kafkamodel.GroupAccess.
type GroupAccess = kafkamodel.GroupAccess

// GroupAccess lists the groups of every type and describes the named ones plus up to 20 listed
// ones of each type, each with its type's request as the lag pages do. Errors wrap
// ops.ErrUnavailable: the listing failed as a whole (a group-level authorization error is in
// Described instead).
func (c *Cluster) GroupAccess(ctx context.Context, named ...string) (GroupAccess, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	listed, err := c.adm.ListGroups(ctx)
	if err != nil {
		return GroupAccess{}, c.fail("list groups", err)
	}
	ga := GroupAccess{Listed: listed.Groups(), Types: map[string]string{}, Described: map[string]error{}}
	sort.Strings(ga.Listed)
	byType := map[string][]string{}
	perType := map[string]int{}
	for _, g := range ga.Listed {
		t := listed[g].GroupType
		if t == "" {
			t = GroupClassic
		}
		ga.Types[g] = t
		if slices.Contains(named, g) || perType[t] < 20 {
			perType[t]++
			byType[t] = append(byType[t], g)
		}
	}
	for _, g := range named {
		if _, ok := ga.Types[g]; !ok && !slices.Contains(byType[GroupClassic], g) {
			byType[GroupClassic] = append(byType[GroupClassic], g) // not listed: any describe says why
		}
	}
	// answer records each wanted group's error: its own from the answer, else the error of the
	// request (an authorization refusal, a shard that failed). A request that failed for want
	// of a broker, with nothing answered, fails the check as a whole.
	answer := func(op string, want []string, errOf func(g string) (error, bool), err error) error {
		reqErr := err
		if se, ok := errors.AsType[*kadm.ShardErrors](err); ok && len(se.Errs) > 0 {
			reqErr = se.Errs[0].Err // e.g. GROUP_AUTHORIZATION_FAILED, or the broker that did not answer
		}
		_, isKerr := errors.AsType[*kerr.Error](reqErr)
		_, isAuth := errors.AsType[*kadm.AuthError](reqErr)
		answered := 0
		for _, g := range want {
			if e, ok := errOf(g); ok {
				ga.Described[g] = e
				answered++
			} else if reqErr != nil {
				ga.Described[g] = reqErr
			} else {
				ga.Described[g] = errors.New("not in the response")
			}
		}
		if reqErr != nil && answered == 0 && !isKerr && !isAuth {
			return c.fail(op, err)
		}
		return nil
	}
	if want := byType[GroupClassic]; len(want) > 0 {
		described, err := c.adm.DescribeGroups(ctx, want...)
		if err := answer("describe groups", want, func(g string) (error, bool) { d, ok := described[g]; return d.Err, ok }, err); err != nil {
			return ga, err
		}
	}
	if want := byType[GroupConsumer]; len(want) > 0 {
		described, err := c.describeConsumerGroups(ctx, want)
		if err := answer("describe consumer groups", want, func(g string) (error, bool) { d, ok := described[g]; return d.Err, ok }, err); err != nil {
			return ga, err
		}
	}
	if want := byType[GroupShare]; len(want) > 0 {
		described, err := c.describeShareGroups(ctx, want)
		if err := answer("describe share groups", want, func(g string) (error, bool) { d, ok := described[g]; return d.Err, ok }, err); err != nil {
			return ga, err
		}
	}
	return ga, nil
}

// ACL is kafkamodel.ACL.
type ACL = kafkamodel.ACL

// ErrACLsNotAnswered is kafkamodel.ErrACLsNotAnswered: the same error, so errors.Is matches either name.
var ErrACLsNotAnswered = kafkamodel.ErrACLsNotAnswered

// TopicACLs describes the ACLs that apply to topic (literal, prefixed and wildcard). It needs
// DESCRIBE on the cluster; a cluster that refuses or does not implement it gives ErrACLsNotAnswered
// (wrapping its error).
func (c *Cluster) TopicACLs(ctx context.Context, topic string) ([]ACL, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeTopic
	req.ResourceName = kmsg.StringPtr(topic)
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, errors.Join(ErrACLsNotAnswered, c.fail("describe acls", err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, errors.Join(ErrACLsNotAnswered, err)
	}
	var out []ACL
	for _, r := range resp.Resources {
		for _, e := range r.ACLs {
			out = append(out, ACL{Principal: e.Principal, Host: e.Host, Operation: e.Operation.String(),
				Allow: e.PermissionType == kmsg.ACLPermissionTypeAllow, Pattern: r.ResourcePatternType.String(),
				Resource: r.ResourceName})
		}
	}
	return out, nil
}

// ACLsAllow is kafkamodel.ACLsAllow.
func ACLsAllow(acls []ACL, principal, op string) bool {
	return kafkamodel.ACLsAllow(acls, principal, op)
}

// CheckSchemaRegistry lists the subjects of the cluster's Schema Registry (kafka[].schema_registry)
// with its credentials; Configured is false when none is configured.
func (c *Cluster) CheckSchemaRegistry(ctx context.Context) (schema.RegistryCheck, error) {
	return c.schemas.CheckRegistry(ctx)
}
