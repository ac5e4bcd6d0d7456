package rabbit

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// parseVersion reads "4.0.5", "3.10.8" or "4.1.0-rc.1"; what it cannot read is the zero Version.
func parseVersion(s string) Version {
	v := Version{Text: s}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return v
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return v
	}
	v.Major, v.Minor = major, minor
	return v
}

// versionTTL is how long a read version is trusted: a broker upgraded in place is seen within it.
const versionTTL = time.Minute

// Version is the broker's RabbitMQ version, read at most once a versionTTL. Errors: the
// management API unreachable or refusing the credentials → ops.ErrUnavailable.
func (b *Broker) Version(ctx context.Context) (Version, error) {
	b.ver.mu.Lock()
	v, at := b.ver.v, b.ver.at
	b.ver.mu.Unlock()
	if !at.IsZero() && time.Since(at) < versionTTL {
		return v, nil
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var ov struct {
		Version string `json:"rabbitmq_version"`
	}
	if err := b.getJSON(ctx, "overview", url.Values{"columns": {"rabbitmq_version"}}, &ov); err != nil {
		return Version{}, b.fail("version", err)
	}
	v = parseVersion(ov.Version)
	b.ver.mu.Lock()
	b.ver.v, b.ver.at = v, time.Now()
	b.ver.mu.Unlock()
	return v, nil
}

// quorumRules are how a RabbitMQ series treats quorum queues, where it matters to reading one
// without disturbing it. Every version-dependent rule of the package is here, named by what it
// changes, so that a new series is one more case in rulesFor.
type quorumRules struct {
	// defaultLimit is the delivery limit of a quorum queue that no argument or policy limits
	// (RabbitMQ 4.0: 20, "messages that are redelivered 20 times or more will be dead-lettered
	// or dropped"); nil: unlimited.
	defaultLimit *int64
	// negativeUnlimits: a delivery-limit of -1 (any negative) in an argument or a policy disables
	// the limit, whatever the other says (4.0's rabbit_quorum_queue:resolve_delivery_limit takes
	// the max then). Before 4.0 a policy refuses -1 ("not a valid delivery limit"), but a queue
	// argument of -1 is accepted and then drops a message the first time it goes back (seen on
	// 3.10: one basic.get and requeue): a limit of 0.
	negativeUnlimits bool
	// headReturns: messages returned by closing the channel that holds them (after cancelling its
	// consumer) go back to the head of a quorum queue, in their order (Version.QuorumReturnsToHead,
	// which BrowseCost reads too; a basic.nack(requeue) of an unlimited queue puts them at its back).
	headReturns bool
	// classicOnlyKeys: a policy holding one of these keys does not apply to a quorum queue at
	// all (3.10's rabbit_quorum_queue:is_policy_applicable), so a lower-priority one does. 4.0
	// removed classic mirroring and lets queue-version reach quorum queues: a policy of
	// queue-version and delivery-limit limits them.
	classicOnlyKeys []string
}

// defaultDeliveryLimit4 is RabbitMQ 4.x's delivery limit of a quorum queue nobody limited.
const defaultDeliveryLimit4 = rabbitmodel.DefaultDeliveryLimit4

func rulesFor(v Version) quorumRules {
	if v.Major >= 4 {
		limit := int64(defaultDeliveryLimit4)
		return quorumRules{defaultLimit: &limit, negativeUnlimits: true, headReturns: v.QuorumReturnsToHead(),
			classicOnlyKeys: []string{"max-priority"}}
	}
	return quorumRules{classicOnlyKeys: []string{
		"ha-mode", "ha-params", "ha-sync-mode", "ha-promote-on-shutdown", "ha-promote-on-failure",
		"queue-master-locator", "queue-mode", "queue-version", "max-priority",
	}}
}

// rules are the broker's quorumRules; an unknown version (the management API did not answer)
// gets 4.x's, which find a limit where 3.x's would not: erring that way costs a refusal or an
// early custody, never a message.
func (b *Broker) rules(ctx context.Context) quorumRules {
	v, err := b.Version(ctx)
	if err != nil {
		return rulesFor(Version{Major: 4})
	}
	return rulesFor(v)
}

// quorumLimit is a quorum queue's effective delivery limit (nil: unlimited) from what the
// management API reports (reported: a number, "unlimited", or absent — statistics appear seconds
// after a declare, and 3.x does not report it), else from the argument and the policy as the
// broker combines them.
func (r quorumRules) quorumLimit(reported json.RawMessage, args, policy map[string]any) *int64 {
	if len(reported) > 0 && string(reported) != "null" {
		var n int64
		if err := json.Unmarshal(reported, &n); err == nil {
			if n < 0 {
				return nil
			}
			return &n
		}
		var s string
		if err := json.Unmarshal(reported, &s); err == nil && s == "unlimited" {
			return nil
		}
	}
	arg, pol := signedArg(args, "x-delivery-limit"), signedArg(policy, "delivery-limit")
	if r.negativeUnlimits && ((arg != nil && *arg < 0) || (pol != nil && *pol < 0)) {
		return nil
	}
	if arg != nil && *arg < 0 {
		zero := int64(0) // 3.x: every return drops it (negativeUnlimits)
		arg = &zero
	}
	if pol != nil && *pol < 0 {
		pol = nil
	}
	if l := minOf(arg, pol); l != nil {
		return l
	}
	return r.defaultLimit
}
