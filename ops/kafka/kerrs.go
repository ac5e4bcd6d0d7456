package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The broker's answers other packages act on, named so that they need not import the driver.

// TopicDenied says whether err is Kafka's TOPIC_AUTHORIZATION_FAILED: the principal may not
// describe a topic (asked of a topic, or of a group whose members are assigned one).
func TopicDenied(err error) bool { return errors.Is(err, kerr.TopicAuthorizationFailed) }

// GroupMissing says whether err is Kafka's GROUP_ID_NOT_FOUND.
func GroupMissing(err error) bool { return errors.Is(err, kerr.GroupIDNotFound) }

// Code is Kafka's error code in err (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), or "" when err holds
// none.
func Code(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return ""
}

// The same answers as methods, so that a port (console doctor's) has the cluster classify its own
// errors and its caller needs no driver to tell them apart.

// TopicDenied is TopicDenied.
func (*Cluster) TopicDenied(err error) bool { return TopicDenied(err) }

// GroupMissing is GroupMissing.
func (*Cluster) GroupMissing(err error) bool { return GroupMissing(err) }

// Refusal is Refusal.
func (*Cluster) Refusal(err error) bool { return Refusal(err) }

// Code is Code.
func (*Cluster) Code(err error) string { return Code(err) }
