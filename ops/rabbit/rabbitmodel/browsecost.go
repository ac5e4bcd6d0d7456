package rabbitmodel

import (
	"fmt"
	"regexp"
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

// UnlimitFix is the sentence that says how to browse quorum queue q for free on RabbitMQ 4.x: a
// policy of delivery-limit -1, with the command (UnlimitCommand) or the policy to add it to.
func UnlimitFix(q Queue) string {
	return fmt.Sprintf("To browse for free, give dead-letter queues a policy with delivery-limit -1 (on RabbitMQ 4 removing "+
		"the limit brings back the default of %d): %s", DefaultDeliveryLimit4, fix4(q))
}

// UnlimitCommand is the rabbitmqctl command that lifts quorum queue q's delivery limit on
// RabbitMQ 4.x: a policy of delivery-limit -1 matching only q (a -1 in a policy wins over any
// argument there). It is "" when a policy applies to q already: RabbitMQ applies one policy to a
// queue, so a new one would either not apply (a lower priority) or replace that policy's keys,
// its dead-letter exchange among them; delivery-limit -1 belongs in that policy's definition.
func UnlimitCommand(q Queue) string {
	if q.Policy != "" {
		return ""
	}
	return fmt.Sprintf("rabbitmqctl set_policy -p %s --apply-to quorum_queues dlq-unlimited %s '{\"delivery-limit\":-1}'",
		ShellQuote(q.Vhost), ShellQuote("^"+regexp.QuoteMeta(q.Name)+"$"))
}

// fix4 is the fix on RabbitMQ 4.x: the command, or the policy to add the key to.
func fix4(q Queue) string {
	if cmd := UnlimitCommand(q); cmd != "" {
		return cmd
	}
	return fmt.Sprintf("add \"delivery-limit\": -1 to the definition of policy %q, which applies to this queue "+
		"(RabbitMQ applies one policy to a queue: a new one would not apply, or would replace that policy's keys)", q.Policy)
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

// UnlimitAdvice is the fix for quorum dead-letter queue q's delivery limit, in words and a command.
func UnlimitAdvice(q Queue) string {
	return "to read it freely, give dead-letter queues no delivery limit with a policy of delivery-limit -1 (" +
		UnlimitPolicy(q) + "; on RabbitMQ 4.x removing the limit brings back the default of 20, only -1 disables it), " +
		"or dead-letter into a stream"
}

// UnlimitPolicy is the rabbitmqctl command that lifts quorum queue q's delivery limit: a policy of
// delivery-limit -1 applied to it (priority 10, above a catch-all policy of priority 0).
func UnlimitPolicy(q Queue) string {
	return fmt.Sprintf("rabbitmqctl set_policy -p %s --apply-to quorum_queues --priority 10 dlq-unlimited %s '{\"delivery-limit\":-1}'",
		ShellQuote(q.Vhost), ShellQuote("^"+regexp.QuoteMeta(q.Name)+"$"))
}

// ShellQuote quotes s as one word for a POSIX shell, for the rabbitmqctl commands a fix names.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
