package rabbitmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// CustodyReserve is how many deliveries a message keeps after a read returned it: one for its
// eventual consumer (a replay job that acks it) and one for a read that fails halfway (a
// connection lost returns what it held). A read takes a message it would leave with fewer into
// Redrive's archive instead of returning it.
const CustodyReserve = 2

// BrowseCost says, before anyone clicks, what browsing q costs on a broker of version v, in the
// words a page shows beside its Browse button. It follows the rules a browse itself applies
// (readModeOf), from the queue's settings as last sampled:
//   - refusal: why a browse is refused — a quorum queue with a delivery limit on RabbitMQ 3.x,
//     where a browse reads and returns the whole queue and each return counts a delivery — with
//     the fix on 3.x. A page offers no browse then.
//   - warning: what each browse costs — a quorum queue with a delivery limit on RabbitMQ 4.x
//     (every quorum queue has one there, 20 by default): one delivery per message read, messages
//     near the limit taken into Redrive's archive — with the fix on 4.x.
//
// Both are empty for a queue whose browse costs no delivery that counts (classic queues,
// streams, unlimited quorum queues). An unknown version (the zero Version: the management API did
// not say) is taken as 4.x, which never offers a browse that a limit would make dangerous.
//
// On 3.x a negative x-delivery-limit argument is refused too: RabbitMQ 3.10 accepts -1 there (its
// policies refuse it) and then drops a message at its first return — measured: one basic.get and
// nack(requeue) of such a queue emptied it — where 4.x reads -1 as unlimited.
func BrowseCost(q Queue, v Version) (refusal, warning string) {
	v4 := v.Major == 0 || v.QuorumReturnsToHead()
	if q.Type == TypeQuorum && !v4 {
		if s, ok := q.Arguments["x-delivery-limit"]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n < 0 {
				return fmt.Sprintf("Not browsable on RabbitMQ %s: quorum queue with x-delivery-limit %d. RabbitMQ 3.x reads a "+
					"negative limit as none left, not as unlimited (that is 4.x): it drops a message of this queue the first "+
					"time it goes back, so a browse would empty it. Shovel the messages to a classic queue to look at them, "+
					"or, after an upgrade to RabbitMQ 4, browse them there.", versionText(v), n), ""
			}
		}
	}
	if q.Type != TypeQuorum || q.DeliveryLimit == nil {
		return "", ""
	}
	limit := *q.DeliveryLimit
	from := limitSource(q, v4)
	if !v4 {
		return fmt.Sprintf("Not browsable on RabbitMQ %s: quorum queue with a delivery limit of %d (from %s). On RabbitMQ 3.x a "+
			"browse reads and returns the whole queue and each return counts as a delivery, so browsing would dead-letter or "+
			"drop these messages. %s", versionText(v), limit, from, fix3(q)), ""
	}
	return "", fmt.Sprintf("Each browse costs every message it reads one of its %d deliveries (from %s); a message with fewer "+
		"than %d left is moved to Redrive's archive instead of being dropped. %s", limit, from, CustodyReserve, UnlimitFix(q))
}

// UnlimitFix is the sentence that says how to browse quorum queue q for free on RabbitMQ 4.x, from
// q as sampled (LiftLimit without the policies' definitions).
func UnlimitFix(q Queue) string {
	return "To browse for free, " + LiftLimit(q, Version{Major: 4}, LimitSetting{})
}

// UnlimitCommand is the rabbitmqctl command that lifts quorum queue q's delivery limit on
// RabbitMQ 4.x when no policy applies to it: a policy of delivery-limit -1 matching only q. It is
// "" when a policy applies to q already — RabbitMQ applies one policy to a queue, so a new one
// would either not apply (a lower priority) or replace that policy's keys, its dead-letter
// exchange among them; delivery-limit -1 belongs in that policy's definition (LiftLimit) — and
// when q's x-delivery-limit argument sets a limit, which no policy lifts: 4.0 takes the higher of
// an argument and a policy when either is negative (rabbit_quorum_queue:resolve_delivery_limit),
// so argument 5 and policy -1 make 5.
func UnlimitCommand(q Queue) string {
	if q.Policy != "" || argumentLimit(q) != nil {
		return ""
	}
	return newPolicyCommand(q, nil)
}

// argumentLimit is q's x-delivery-limit argument when it is a limit (0 or more); nil otherwise.
func argumentLimit(q Queue) *int64 {
	s, ok := q.Arguments["x-delivery-limit"]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// fix3 is the fix on RabbitMQ 3.x, where a quorum queue without a limit is unlimited and a
// negative one is no limit of its own (the other setting applies).
func fix3(q Queue) string {
	var fix string
	if _, ok := q.Arguments["x-delivery-limit"]; ok {
		fix = "To look at them, remove the limit: a queue argument cannot be changed, so declare a queue without " +
			"x-delivery-limit and shovel the messages there"
	}
	if q.Policy != "" || q.OperatorPolicy != "" {
		if fix == "" {
			fix = "To look at them, remove delivery-limit from " + policyNames(q)
		} else {
			fix += " (and keep delivery-limit out of " + policyNames(q) + ")"
		}
	}
	if fix == "" {
		fix = "To look at them, remove the delivery limit"
	}
	return fix + ", or shovel the messages to a classic queue and browse them there. After an upgrade to RabbitMQ 4, " +
		"give dead-letter queues delivery-limit -1 instead: there a quorum queue without a limit has the default of " +
		strconv.Itoa(DefaultDeliveryLimit4) + "."
}

// limitSource says where q's delivery limit comes from, as far as its sampled settings show: the
// argument, a policy, or (4.x) the default nobody set.
func limitSource(q Queue, v4 bool) string {
	limit := *q.DeliveryLimit
	if s, ok := q.Arguments["x-delivery-limit"]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n == limit {
			return "its x-delivery-limit argument"
		}
	}
	if q.Policy != "" || q.OperatorPolicy != "" {
		s := policyNames(q)
		if v4 && limit == DefaultDeliveryLimit4 {
			s += ", or RabbitMQ 4's default for quorum queues"
		}
		return s
	}
	if v4 && limit == DefaultDeliveryLimit4 {
		return "RabbitMQ 4's default for quorum queues: nobody set one"
	}
	return "its settings"
}

func policyNames(q Queue) string {
	var parts []string
	if q.Policy != "" {
		parts = append(parts, "policy "+strconv.Quote(q.Policy))
	}
	if q.OperatorPolicy != "" {
		parts = append(parts, "operator policy "+strconv.Quote(q.OperatorPolicy))
	}
	return strings.Join(parts, " or ")
}

func versionText(v Version) string {
	if v.Text != "" {
		return v.Text
	}
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
}

// UnlimitAdvice is the fix for quorum dead-letter queue q's delivery limit, in words and a
// command, from q as sampled (UnlimitPolicy).
func UnlimitAdvice(q Queue) string { return UnlimitAdviceWith(UnlimitPolicy(q)) }

// UnlimitAdviceWith is UnlimitAdvice with fix (LiftLimit's) for the limit. The other way it names
// is a classic queue, which counts no deliveries: a stream would keep the dead letters readable,
// but no replay or discard can take them out of one (StreamNotASource).
func UnlimitAdviceWith(fix string) string {
	return "to read it freely, " + fix + "; or dead-letter into a classic queue, which has no delivery limit"
}

// UnlimitPolicy is how to lift quorum queue q's delivery limit on RabbitMQ 4.x, from q as sampled:
// LiftLimit without the policies' definitions. It never prints a command that would replace the
// policy applying to q: with one, it names the policy to add delivery-limit -1 to.
func UnlimitPolicy(q Queue) string { return LiftLimit(q, Version{Major: 4}, LimitSetting{}) }

// Policy is a policy or an operator policy as a fix that redefines it needs it: rabbitmqctl
// set_policy (set_operator_policy) replaces the policy of that name whole — pattern, priority,
// apply-to, definition — so the fix prints all of them.
type Policy struct {
	Name, Pattern, ApplyTo string
	Priority               int
	Definition             map[string]any
}

// LimitSetting is what, besides its x-delivery-limit argument, sets a quorum queue's delivery
// limit, as LiftLimit needs it: the policy and the operator policy that apply to the queue now,
// definitions and all (nil: none applies, or it is not known — then Queue.Policy and
// Queue.OperatorPolicy name it), and the names of the vhost's policies, none of which a new
// policy may take (set_policy would replace that one).
type LimitSetting struct {
	Policy, OperatorPolicy *Policy
	PolicyNames            []string
}

// LiftLimit says how to lift quorum queue q's delivery limit on a broker of version v (the zero
// Version: 4.x), set by its x-delivery-limit argument (q.Arguments) and s, in words ending with the
// commands to run. RabbitMQ applies one policy to a queue, so delivery-limit -1 goes into the
// definition of the policy that applies, printed whole with the rest of its keys; only when none
// applies is it a new policy, matching q alone. On RabbitMQ 4.0 a -1 yields to a limit set
// elsewhere — the higher of two settings wins when either is negative, for an argument against
// the policies (rabbit_quorum_queue:resolve_delivery_limit) and a policy against an operator
// policy (rabbit_policies:merge_policy_value) — so no policy lifts an argument's limit (a queue's
// arguments cannot change: the messages must move to a queue without it), and an operator
// policy's limit needs an administrator to make it -1 there. On 3.x a policy refuses -1 and a
// queue without a limit is unlimited: the fix takes delivery-limit out.
func LiftLimit(q Queue, v Version, s LimitSetting) string {
	if v.Major != 0 && !v.QuorumReturnsToHead() {
		return liftLimit3(q, s)
	}
	if n := argumentLimit(q); n != nil {
		return fmt.Sprintf("declare a quorum queue with x-delivery-limit -1, dead-letter into it instead of %q, and move "+
			"these messages there with a shovel: its x-delivery-limit argument (%d) sets the limit and no policy lifts "+
			"it — RabbitMQ 4 keeps an argument's limit against a policy's delivery-limit -1 (of two settings it takes the "+
			"higher when either is negative) — and a queue's arguments cannot be changed", q.Name, *n)
	}
	var steps []string
	opVal := limitIn(s.OperatorPolicy)
	if opVal != nil && *opVal >= 0 {
		op := *s.OperatorPolicy
		steps = append(steps, fmt.Sprintf("have an administrator make delivery-limit -1 in operator policy %q, keeping "+
			"the rest of its definition (it sets %d, which no policy's -1 lifts: of two settings RabbitMQ takes the higher "+
			"when either is negative; it then applies to every queue the operator policy matches): %s", op.Name, *opVal,
			policyCommand("set_operator_policy", q.Vhost, op, withLimit(op.Definition, -1))))
		minus := int64(-1)
		opVal = &minus
	}
	polVal := limitIn(s.Policy)
	argSet := strings.TrimSpace(q.Arguments["x-delivery-limit"]) != ""
	switch {
	case s.Policy != nil && (polVal != nil && *polVal >= 0 || polVal == nil && opVal == nil && !argSet):
		p := *s.Policy
		steps = append(steps, fmt.Sprintf("add delivery-limit -1 to policy %q, which applies to this queue, keeping the "+
			"rest of its definition (RabbitMQ applies one policy to a queue: a second one would not apply, or would "+
			"replace this one's keys); it then applies to every queue the policy matches: %s", p.Name,
			policyCommand("set_policy", q.Vhost, p, withLimit(p.Definition, -1))))
	case s.Policy == nil && q.Policy != "":
		steps = append(steps, fmt.Sprintf("add \"delivery-limit\": -1 to the definition of policy %q, which applies to this "+
			"queue (RabbitMQ applies one policy to a queue: a new one would not apply, or would replace that policy's keys)",
			q.Policy))
	case s.Policy == nil && opVal == nil && !argSet:
		steps = append(steps, fmt.Sprintf("give dead-letter queues a policy with delivery-limit -1 (on RabbitMQ 4 removing "+
			"the limit brings back the default of %d): %s", DefaultDeliveryLimit4, newPolicyCommand(q, s.PolicyNames)))
	}
	if s.OperatorPolicy == nil && q.OperatorPolicy != "" {
		steps = append(steps, fmt.Sprintf("if operator policy %q sets a delivery-limit, an administrator must make it -1 "+
			"there too: no policy's -1 lifts it", q.OperatorPolicy))
	}
	if len(steps) == 0 {
		return "nothing to do: its argument and the policies in force now lift the limit already (the figure shown " +
			"is from a moment ago)"
	}
	return strings.Join(steps, "; then ")
}

// liftLimit3 is LiftLimit on RabbitMQ 3.x: take the limit out (3.x has no default, and refuses -1
// in a policy).
func liftLimit3(q Queue, s LimitSetting) string {
	if _, ok := q.Arguments["x-delivery-limit"]; ok {
		return fmt.Sprintf("declare a queue without x-delivery-limit, dead-letter into it instead of %q, and move these "+
			"messages there with a shovel: its x-delivery-limit argument sets the limit, and a queue's arguments cannot be "+
			"changed", q.Name)
	}
	var steps []string
	for _, c := range []struct {
		p              *Policy
		named, kind    string
		set, clear, by string
	}{
		{s.Policy, q.Policy, "policy", "set_policy", "clear_policy", ""},
		{s.OperatorPolicy, q.OperatorPolicy, "operator policy", "set_operator_policy", "clear_operator_policy", "an administrator can "},
	} {
		switch {
		case c.p != nil && limitIn(c.p) != nil:
			def := withLimit(c.p.Definition, 0)
			delete(def, "delivery-limit")
			why := "(on RabbitMQ 3.x a quorum queue without a limit has none, and a policy refuses -1)"
			if len(def) == 0 {
				steps = append(steps, fmt.Sprintf("%sremove %s %q, whose only key is delivery-limit %s, and keep delivery-limit "+
					"out of any other that matches the queue (the next one by priority applies then): rabbitmqctl %s -p %s %s",
					c.by, c.kind, c.p.Name, why, c.clear, ShellQuote(q.Vhost), shellWord(c.p.Name)))
				continue
			}
			steps = append(steps, fmt.Sprintf("%stake delivery-limit out of %s %q, keeping the rest of its definition %s: %s",
				c.by, c.kind, c.p.Name, why, policyCommand(c.set, q.Vhost, *c.p, def)))
		case c.p == nil && c.named != "":
			steps = append(steps, fmt.Sprintf("remove delivery-limit from %s %q", c.kind, c.named))
		}
	}
	if len(steps) == 0 {
		return "remove the delivery limit"
	}
	return strings.Join(steps, "; then ")
}

// limitIn is p's delivery-limit; nil when p is nil or sets none.
func limitIn(p *Policy) *int64 {
	if p == nil {
		return nil
	}
	var n int64
	switch v := p.Definition["delivery-limit"].(type) {
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return nil
		}
		n = i
	case float64:
		n = int64(v)
	case int:
		n = int64(v)
	case int64:
		n = v
	default:
		return nil
	}
	return &n
}

// withLimit is a copy of def with delivery-limit n.
func withLimit(def map[string]any, n int64) map[string]any {
	out := make(map[string]any, len(def)+1)
	for k, v := range def {
		out[k] = v
	}
	out["delivery-limit"] = json.Number(strconv.FormatInt(n, 10))
	return out
}

// policyCommand is the rabbitmqctl command (set_policy or set_operator_policy) that redefines p
// with definition def, keeping its pattern, priority and apply-to.
func policyCommand(verb, vhost string, p Policy, def map[string]any) string {
	cmd := fmt.Sprintf("rabbitmqctl %s -p %s --priority %d", verb, ShellQuote(vhost), p.Priority)
	if p.ApplyTo != "" {
		cmd += " --apply-to " + p.ApplyTo
	}
	return cmd + " " + shellWord(p.Name) + " " + ShellQuote(p.Pattern) + " " + ShellQuote(definitionJSON(def))
}

// newPolicyCommand is the rabbitmqctl command that gives quorum queue q, to which no policy
// applies, a policy of delivery-limit -1 matching it alone. The policy is named after q
// (dlq-unlimited-<queue>), and not as one of taken: set_policy replaces a policy of the same name,
// so with one name for all, running two queues' fixes would leave only the second one unlimited.
func newPolicyCommand(q Queue, taken []string) string {
	name := "dlq-unlimited-" + q.Name
	for i := 2; slices.Contains(taken, name); i++ {
		name = "dlq-unlimited-" + q.Name + "-" + strconv.Itoa(i)
	}
	return fmt.Sprintf("rabbitmqctl set_policy -p %s --apply-to quorum_queues %s %s '{\"delivery-limit\":-1}'",
		ShellQuote(q.Vhost), shellWord(name), ShellQuote("^"+regexp.QuoteMeta(q.Name)+"$"))
}

// definitionJSON is def as JSON, keys sorted, numbers as given.
func definitionJSON(def map[string]any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(def); err != nil {
		return "{}"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// shellWord is s as one word for a POSIX shell: as it is when it needs no quotes.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return ShellQuote(s)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@%+=,-]*$`)

// ShellQuote quotes s as one word for a POSIX shell, for the rabbitmqctl commands a fix names.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
