package kafkamodel

import (
	"errors"
	"strings"
)

// What the console's principal may do on a cluster, as console doctor reads it: plain data, so
// that the doctor checks rights without importing the client that asks for them.

// Access is what the cluster says the console's principal may do, read with one metadata request
// that asks for the authorized operations of every topic (KIP-430). Nothing is written.
type Access struct {
	ClusterID string
	Brokers   int
	// Topics are every topic the metadata lists (a topic the principal may not describe is listed
	// with its error by a broker that enforces ACLs, or left out).
	Topics map[string]TopicAccess
	// OpsKnown is false when the brokers omitted the authorized operations (an old broker, or one
	// that does not compute them): Read and Write are then unknown, see DescribeACLs.
	OpsKnown bool
}

// TopicAccess is the principal's rights on one topic.
type TopicAccess struct {
	Err         error // the topic's metadata error (kerr.TopicAuthorizationFailed, …); nil when fine
	Describe    bool
	Read, Write bool // meaningful only when Access.OpsKnown
	Internal    bool
}

// GroupAccess is the outcome of listing and describing groups of every type.
type GroupAccess struct {
	Listed []string // sorted
	// Types is each listed group's type (GroupClassic, GroupConsumer, GroupShare). A group the
	// principal may not describe is not listed at all (Kafka leaves it out of ListGroups), so a
	// named group missing here has no known type.
	Types map[string]string
	// Described maps each described group to its error (nil: described fine), each with the
	// request of its type: DescribeGroups (classic, and named groups not listed),
	// ConsumerGroupDescribe (consumer), ShareGroupDescribe (share).
	Described map[string]error
}

// ACL is one access control entry the cluster reports for a topic.
type ACL struct {
	Principal string // User:alice, User:*
	Host      string
	Operation string // READ, WRITE, ALL, …
	Allow     bool
	// Pattern is how the resource name matched: LITERAL, PREFIXED (the name is a prefix) or the
	// wildcard topic "*".
	Pattern  string
	Resource string
}

// ErrACLsNotAnswered is returned by TopicACLs when the cluster does not answer DescribeACLs (no
// authorizer, an old broker, or one that does not implement it).
var ErrACLsNotAnswered = errors.New("the cluster does not answer DescribeACLs")

// ACLsAllow reports whether acls let principal do op (READ, WRITE) from any host: an ALLOW for
// the principal or User:* with the operation or ALL, and no DENY.
func ACLsAllow(acls []ACL, principal, op string) bool {
	allowed := false
	for _, a := range acls {
		if a.Principal != principal && a.Principal != "User:*" {
			continue
		}
		if !strings.EqualFold(a.Operation, op) && !strings.EqualFold(a.Operation, "ALL") {
			continue
		}
		if !a.Allow {
			return false
		}
		allowed = true
	}
	return allowed
}

// TransactionAccess is what the console may learn of the cluster's transactions, for console
// doctor: open transactions are told by their transactional id only when the principal may
// DESCRIBE it (Kafka leaves the others out of ListTransactions without a word, and a transaction
// whose id cannot be listed reads as hanging).
type TransactionAccess struct {
	// Listed are the transactional ids ListTransactions answered; ListErr is its refusal or
	// failure.
	Listed  []string
	ListErr error
	// Refused are listed ids DescribeTransactions refused, with the refusal.
	Refused map[string]error
	// ProbeErr is DescribeTransactions' answer for a transactional id nobody uses: Kafka checks
	// DESCRIBE before it looks the id up, so TRANSACTIONAL_ID_AUTHORIZATION_FAILED means the
	// principal may not describe every id, and nil (the id is not found) that it may.
	ProbeErr error
	// Unnamed are transactions open on a partition whose producer has no listed transactional
	// id: hanging, or hidden from the principal. OpenErr is why they could not be read.
	Unnamed []OpenTransaction
	OpenErr error
}

// RegistryCheck is what the doctor learns from the Schema Registry.
type RegistryCheck struct {
	Configured bool
	Subjects   int
	// Status is the HTTP status of a refused request (401, 403, …); 0 when the registry answered
	// or could not be reached at all.
	Status int
}
