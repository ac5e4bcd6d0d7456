package rabbit

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	rabbithole "github.com/michaelklishin/rabbit-hole/v2"
)

// policyDeliveryLimit works out, from the policy and operator-policy definitions themselves, the
// delivery limit policies give a quorum queue. The management API reports a quorum queue's policy
// from statistics the queue emits every few seconds, so a policy applied just now is missing
// there, and a browse must not rely on it. This errs on the side of finding a limit: patterns Go
// cannot compile count as matching, and among policies of the same top priority any limit counts.
// It returns the limit and the policy that sets it, or nil.
func (b *Broker) policyDeliveryLimit(ctx context.Context, vhost, queue string, rules quorumRules) (*int64, string, error) {
	ps, err := call(ctx, func() ([]rabbithole.Policy, error) { return b.rh.ListPoliciesIn(vhost) })
	if err != nil {
		return nil, "", fmt.Errorf("list policies: %w", err)
	}
	ops, err := call(ctx, func() ([]rabbithole.OperatorPolicy, error) { return b.rh.ListOperatorPoliciesIn(vhost) })
	if err != nil {
		return nil, "", fmt.Errorf("list operator policies: %w", err)
	}
	cands := make([]policyCandidate, 0, len(ps)+len(ops))
	for _, p := range ps {
		cands = append(cands, policyCandidate{p.Name, p.Pattern, p.ApplyTo, p.Priority, normalize(p.Definition), false})
	}
	for _, p := range ops {
		cands = append(cands, policyCandidate{p.Name, p.Pattern, p.ApplyTo, p.Priority, normalize(p.Definition), true})
	}
	limit, from := quorumPolicyLimit(queue, cands, rules)
	return limit, from, nil
}

type policyCandidate struct {
	name, pattern, applyTo string
	priority               int
	def                    map[string]any
	operator               bool
}

// quorumPolicyLimit picks, like rabbit_policy:match, the highest-priority applicable policy and
// the highest-priority applicable operator policy matching queue, and returns the smaller of their
// delivery limits (RabbitMQ merges the two with min). A limit of -1 is none of its own.
func quorumPolicyLimit(queue string, cands []policyCandidate, rules quorumRules) (*int64, string) {
	var limit *int64
	var from string
	for _, operator := range []bool{false, true} {
		top, found := 0, false
		var lim *int64
		var name string
		for _, c := range cands {
			if c.operator != operator || !appliesToQuorum(c, queue, rules.classicOnlyKeys) {
				continue
			}
			l := intArg(c.def, "delivery-limit")
			switch {
			case !found || c.priority > top:
				top, found, lim, name = c.priority, true, l, c.name
			case c.priority == top && l != nil && (lim == nil || *l < *lim):
				// A tie: RabbitMQ's pick is not specified; assume the limiting one.
				lim, name = l, c.name
			}
		}
		if lim != nil && (limit == nil || *lim < *limit) {
			limit, from = lim, name
			if operator {
				from = "operator policy " + strconv.Quote(name)
			} else {
				from = "policy " + strconv.Quote(name)
			}
		}
	}
	return limit, from
}

func appliesToQuorum(c policyCandidate, queue string, classicOnlyKeys []string) bool {
	switch c.applyTo {
	case "", "all", "queues", "quorum_queues":
	default:
		return false
	}
	for _, k := range classicOnlyKeys {
		if _, ok := c.def[k]; ok {
			return false
		}
	}
	re, err := regexp.Compile(c.pattern)
	if err != nil {
		return true // an Erlang-only regex feature: assume it matches
	}
	return re.MatchString(queue)
}
