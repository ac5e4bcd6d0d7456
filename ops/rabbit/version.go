package rabbit

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
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
	// negativeUnlimits: a negative delivery limit is none (4.0's rabbit_fifo:update_config), and
	// where two settings meet — the x-delivery-limit argument and the policies', or a policy's and
	// an operator policy's — a negative one yields to the other: RabbitMQ 4.0 takes the higher of
	// the two when either is negative, else the lower (combine). So a policy of -1 does not lift
	// an argument's limit, nor an argument of -1 a policy's. Before 4.0 the lower always wins, a
	// policy refuses -1 ("not a valid delivery limit"), and a queue argument of -1 is accepted and
	// then drops a message the first time it goes back (seen on 3.10: one basic.get and requeue):
	// a limit of 0.
	negativeUnlimits bool
	// headReturns: messages returned by closing the channel that holds them (after cancelling its
	// consumer) go back to the head of a quorum queue, in their order (Version.QuorumReturnsToHead,
	// which BrowseCost reads too; a basic.nack(requeue) of an unlimited queue puts them at its back).
	headReturns bool
	// unsupportedPolicyKeys: a policy holding one of these keys does not apply to a quorum queue
	// at all (rabbit_quorum_queue:capabilities' unsupported_policies, which
	// rabbit_queue_type:is_policy_applicable checks), so a lower-priority one does. The same list
	// from 3.10 to 4.1; 4.2 lets single-active-consumer through. queue-version is not on it: a
	// policy of queue-version and delivery-limit limits quorum queues (3.10 and 4.0 alike).
	unsupportedPolicyKeys []string
}

// defaultDeliveryLimit4 is RabbitMQ 4.x's delivery limit of a quorum queue nobody limited.
const defaultDeliveryLimit4 = rabbitmodel.DefaultDeliveryLimit4

// unsupportedByQuorum is rabbit_quorum_queue:capabilities()'s unsupported_policies, 3.10 to 4.1.
var unsupportedByQuorum = []string{
	"max-priority", "queue-mode", "single-active-consumer", "ha-mode", "ha-params", "ha-sync-mode",
	"ha-promote-on-shutdown", "ha-promote-on-failure", "queue-master-locator",
	"max-age", "stream-max-segment-size-bytes", "initial-cluster-size",
}

func rulesFor(v Version) quorumRules {
	keys := unsupportedByQuorum
	if v.Major > 4 || v.Major == 4 && v.Minor >= 2 {
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "single-active-consumer" })
	}
	if v.Major >= 4 {
		limit := int64(defaultDeliveryLimit4)
		return quorumRules{defaultLimit: &limit, negativeUnlimits: true, headReturns: v.QuorumReturnsToHead(),
			unsupportedPolicyKeys: keys}
	}
	return quorumRules{unsupportedPolicyKeys: keys}
}

// combine is the delivery limit two settings give where they meet (nil: not set): an argument and
// the policies' (4.0's rabbit_quorum_queue:resolve_delivery_limit), or a policy and an operator
// policy (rabbit_policies:merge_policy_value). On 4.x, when either is negative the higher wins,
// else the lower; before, the lower.
func (r quorumRules) combine(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case r.negativeUnlimits && (*a < 0 || *b < 0):
		if *b > *a {
			return b
		}
		return a
	case *b < *a:
		return b
	}
	return a
}

// effective is the limit a quorum queue has with delivery limit set (combine's, nil: none set):
// 4.x's default when none is set; unlimited (nil) for a negative one on 4.x, 0 before (see
// negativeUnlimits).
func (r quorumRules) effective(set *int64) *int64 {
	switch {
	case set == nil:
		return r.defaultLimit
	case *set >= 0:
		return set
	case r.negativeUnlimits:
		return nil
	}
	zero := int64(0)
	return &zero
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

// quorumLimit is a quorum queue's effective delivery limit (nil: unlimited): the lower of what the
// management API reports (reported: a number, "unlimited", or absent — statistics appear seconds
// after a declare, and 3.x does not report it) and what the argument and the effective policy
// definition give as the broker combines them. The API's figure trails a policy change by a
// statistics interval, so an "unlimited" that the settings do not confirm is not believed.
func (r quorumRules) quorumLimit(reported json.RawMessage, args, policy map[string]any) *int64 {
	limit := r.effective(r.combine(signedArg(args, "x-delivery-limit"), signedArg(policy, "delivery-limit")))
	if len(reported) == 0 || string(reported) == "null" {
		return limit
	}
	var n int64
	if err := json.Unmarshal(reported, &n); err == nil {
		if n < 0 {
			return limit
		}
		return minOf(&n, limit)
	}
	return limit // "unlimited": only as far as the settings say so
}
