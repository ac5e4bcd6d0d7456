package rabbit

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// The delivery limit RabbitMQ applies to a quorum queue, worked out from the definitions themselves
// the way the broker does it (RabbitMQ 4.0's rabbit_quorum_queue:gather_policy_config; 3.10's
// ra_machine_config), not from the management API's figure, which a quorum queue reports with its
// statistics every few seconds: a policy applied or removed a moment ago is missing there.
//
//   - The policy: among the vhost's policies whose apply-to takes quorum queues, whose pattern
//     matches the queue's name and whose definition holds no key quorum queues refuse
//     (rabbit_quorum_queue:capabilities' unsupported_policies, checked by
//     rabbit_queue_type:is_policy_applicable), the one of highest priority (rabbit_policy:match).
//     Only that one applies: a lower one with a delivery-limit does nothing. The operator policy
//     likewise, among the operator policies.
//   - Their two delivery-limits merge (rabbit_policies:merge_policy_value), and the result meets
//     the x-delivery-limit argument (rabbit_queue_type_util:args_policy_lookup with
//     resolve_delivery_limit) by one rule, quorumRules.combine.
//   - Nothing set: 4.x's default of 20; a negative result: unlimited on 4.x (quorumRules.effective).
//
// Where the console cannot tell which policy RabbitMQ picks — a pattern Go's regexp cannot
// compile (an Erlang-only feature), or policies of the same priority (RabbitMQ's order between
// them is not specified) — each one that may be it is tried, and the lowest limit is taken.

// policyDeliveryLimit is quorum queue vhost/queue's delivery limit as RabbitMQ works it out now
// from its x-delivery-limit argument and the policies and operator policies defined now (nil:
// unlimited), and where it comes from. A browse takes the lower of this and the management API's
// figure: an "unlimited" the API still reports after a -1 policy went is not believed.
func (b *Broker) policyDeliveryLimit(ctx context.Context, vhost, queue string, rules quorumRules) (*int64, string, error) {
	cands, _, err := b.policyCandidates(ctx, vhost)
	if err != nil {
		return nil, "", err
	}
	args, err := b.queueArguments(ctx, vhost, queue)
	if err != nil {
		return nil, "", err
	}
	r := rules.resolveLimit(queue, signedArg(args, "x-delivery-limit"), cands)
	return r.limit, r.from, nil
}

// wirePolicy is a policy or an operator policy as the management API lists it.
type wirePolicy struct {
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Priority   int            `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// policyCandidates lists vhost's policies and operator policies, their definitions' numbers as
// json.Number (exact, for a fix that prints a definition whole), and the policies' names.
func (b *Broker) policyCandidates(ctx context.Context, vhost string) ([]policyCandidate, []string, error) {
	var ps, ops []wirePolicy
	if err := b.getJSON(ctx, "policies/"+url.PathEscape(vhost), nil, &ps); err != nil {
		return nil, nil, fmt.Errorf("list policies: %w", err)
	}
	if err := b.getJSON(ctx, "operator-policies/"+url.PathEscape(vhost), nil, &ops); err != nil {
		return nil, nil, fmt.Errorf("list operator policies: %w", err)
	}
	cands := make([]policyCandidate, 0, len(ps)+len(ops))
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		cands = append(cands, policyCandidate{p.Name, p.Pattern, p.ApplyTo, p.Priority, p.Definition, false})
		names = append(names, p.Name)
	}
	for _, p := range ops {
		cands = append(cands, policyCandidate{p.Name, p.Pattern, p.ApplyTo, p.Priority, p.Definition, true})
	}
	return cands, names, nil
}

// queueArguments reads a queue's arguments (they never change while it exists).
func (b *Broker) queueArguments(ctx context.Context, vhost, queue string) (map[string]any, error) {
	var w struct {
		Arguments map[string]any `json:"arguments"`
	}
	q := url.Values{"columns": {"arguments"}, "disable_stats": {"true"}}
	if err := b.getJSON(ctx, "queues/"+url.PathEscape(vhost)+"/"+url.PathEscape(queue), q, &w); err != nil {
		return nil, fmt.Errorf("queue arguments: %w", err)
	}
	return w.Arguments, nil
}

type policyCandidate struct {
	name, pattern, applyTo string
	priority               int
	def                    map[string]any
	operator               bool
}

// limitResolution is one way RabbitMQ may resolve a quorum queue's delivery limit: with policy
// and operator applying to it (nil: none does).
type limitResolution struct {
	limit            *int64 // nil: unlimited
	from             string // what sets it; "" when unlimited
	policy, operator *policyCandidate
}

// quorumPolicyLimit is the delivery limit of a quorum queue named queue without an
// x-delivery-limit argument, under cands (quorumRules.resolveLimit).
func quorumPolicyLimit(queue string, cands []policyCandidate, rules quorumRules) (*int64, string) {
	r := rules.resolveLimit(queue, nil, cands)
	return r.limit, r.from
}

// resolveLimit is the delivery limit RabbitMQ gives quorum queue queue, whose x-delivery-limit
// argument is arg (nil: none), under the policies and operator policies cands: the lowest of
// every resolution possible (nil, unlimited, only when all are).
func (r quorumRules) resolveLimit(queue string, arg *int64, cands []policyCandidate) limitResolution {
	var best limitResolution
	first := true
	for _, p := range r.mayApply(queue, cands, false) {
		for _, op := range r.mayApply(queue, cands, true) {
			res := r.resolveWith(arg, p, op)
			if first || lower(res.limit, best.limit) {
				best, first = res, false
			}
		}
	}
	return best
}

// lower reports whether limit a is below b (nil: unlimited).
func lower(a, b *int64) bool { return a != nil && (b == nil || *a < *b) }

// resolveWith is the delivery limit with argument arg, policy p and operator policy op applying.
func (r quorumRules) resolveWith(arg *int64, p, op *policyCandidate) limitResolution {
	var pv, ov *int64
	if p != nil {
		pv = signedArg(p.def, "delivery-limit")
	}
	if op != nil {
		ov = signedArg(op.def, "delivery-limit")
	}
	set := r.combine(r.combine(pv, ov), arg)
	res := limitResolution{limit: r.effective(set), policy: p, operator: op}
	switch {
	case res.limit == nil:
	case set == nil:
		res.from = "RabbitMQ 4's default for quorum queues: no argument or policy sets one"
	default:
		var parts []string
		if arg != nil && *arg == *set {
			parts = append(parts, "the x-delivery-limit argument")
		}
		if pv != nil && *pv == *set {
			parts = append(parts, "policy "+strconv.Quote(p.name))
		}
		if ov != nil && *ov == *set {
			parts = append(parts, "operator policy "+strconv.Quote(op.name))
		}
		for i, s := range parts {
			if i > 0 {
				res.from += " and "
			}
			res.from += s
		}
	}
	return res
}

// mayApply is every policy (operator: operator policy) that may be the one RabbitMQ applies to
// quorum queue queue, nil standing for none: the applicable one of highest priority and every
// other of that priority, and before them those of higher priority that may apply (a pattern Go
// cannot compile). Never empty.
func (r quorumRules) mayApply(queue string, cands []policyCandidate, operator bool) []*policyCandidate {
	var sorted []*policyCandidate
	for i := range cands {
		if c := &cands[i]; c.operator == operator {
			sorted = append(sorted, c)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].priority > sorted[j].priority })
	var out []*policyCandidate
	top, found := 0, false
	for _, c := range sorted {
		if found && c.priority < top {
			break
		}
		applies, sure := r.appliesToQuorum(*c, queue)
		if !applies {
			continue
		}
		out = append(out, c)
		if sure && !found {
			top, found = c.priority, true
		}
	}
	if !found {
		out = append(out, nil)
	}
	return out
}

// appliesToQuorum reports whether policy c applies to quorum queue queue (rabbit_policy:matches):
// its apply-to takes quorum queues, its definition holds no key they refuse, its pattern matches.
// sure is false when Go cannot compile the pattern (an Erlang-only regex feature): it may match.
func (r quorumRules) appliesToQuorum(c policyCandidate, queue string) (applies, sure bool) {
	switch c.applyTo {
	case "", "all", "queues", "quorum_queues":
	default:
		return false, true
	}
	for _, k := range r.unsupportedPolicyKeys {
		if _, ok := c.def[k]; ok {
			return false, true
		}
	}
	re, err := regexp.Compile(c.pattern)
	if err != nil {
		return true, false
	}
	return re.MatchString(queue), true
}

// LimitFix is how to lift quorum queue q's delivery limit, worked out from the policies and
// operator policies defined now (rabbitmodel.LiftLimit): the command that adds delivery-limit -1
// to the policy in force, printing its whole definition so that none of its other keys is lost,
// or a new policy's when none applies; what can lift it when no policy can (an x-delivery-limit
// argument; an operator policy's limit). Errors: the management API's.
func (b *Broker) LimitFix(ctx context.Context, q Queue) (string, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	v, err := b.Version(ctx)
	if err != nil {
		v = Version{} // taken as 4.x
	}
	cands, names, err := b.policyCandidates(ctx, q.Vhost)
	if err != nil {
		return "", b.fail("delivery limit fix", err)
	}
	args, err := b.queueArguments(ctx, q.Vhost, q.Name)
	if err != nil {
		return "", b.fail("delivery limit fix", err)
	}
	arguments := make(map[string]string, len(args))
	for k, v := range args {
		arguments[k] = renderJSONValue(v)
	}
	q.Arguments = arguments
	res := rulesFor(v).resolveLimit(q.Name, signedArg(args, "x-delivery-limit"), cands)
	s := rabbitmodel.LimitSetting{PolicyNames: names}
	q.Policy, q.OperatorPolicy = "", ""
	if p := res.policy; p != nil {
		q.Policy = p.name
		s.Policy = &rabbitmodel.Policy{Name: p.name, Pattern: p.pattern, ApplyTo: p.applyTo, Priority: p.priority, Definition: p.def}
	}
	if p := res.operator; p != nil {
		q.OperatorPolicy = p.name
		s.OperatorPolicy = &rabbitmodel.Policy{Name: p.name, Pattern: p.pattern, ApplyTo: p.applyTo, Priority: p.priority, Definition: p.def}
	}
	return rabbitmodel.LiftLimit(q, v, s), nil
}

// unlimitAdvice is UnlimitAdvice with the fix worked out from the policies defined now (LimitFix),
// or, when the management API does not answer, from q as sampled.
func (b *Broker) unlimitAdvice(ctx context.Context, q Queue) string {
	fix, err := b.LimitFix(ctx, q)
	if err != nil {
		return UnlimitAdvice(q)
	}
	return rabbitmodel.UnlimitAdviceWith(fix)
}
