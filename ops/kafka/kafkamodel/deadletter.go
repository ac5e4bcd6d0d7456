package kafkamodel

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/ops"
)

// Dead-letter conventions, as reported in DeadLetter.Convention.
const (
	ConventionSpringDLT         = "spring-dlt"          // Spring Kafka DeadLetterPublishingRecoverer: kafka_dlt-*
	ConventionSpringRetryTopic  = "spring-retry-topic"  // Spring Kafka @RetryableTopic: kafka_original-*, retry_topic-attempts
	ConventionSpringCloudStream = "spring-cloud-stream" // Spring Cloud Stream binder DLQ: x-original-*, x-exception-*
	ConventionPlain             = "plain"               // the seed's names: originalTopic, retryCount, …
	ConventionCustom            = "custom"              // only names configured under kafka[].headers matched
)

// DeadLetter is the failure metadata a producer attached to a dead-lettered or retried record,
// whatever header convention it used. Pointer fields are nil when the header is absent or
// unreadable; strings are empty then.
type DeadLetter struct {
	OriginalTopic     string
	OriginalPartition *int32
	OriginalOffset    *int64
	OriginalTimestamp *time.Time
	ConsumerGroup     string
	ExceptionType     string // fully qualified class name, e.g. org.springframework…ListenerExecutionFailedException
	ExceptionCause    string // the root cause's class name, when the producer reports it separately
	ExceptionMessage  string
	Stacktrace        string
	RetryCount        *int
	MessageID         string // the idempotency key: configured header, else originalMessageId, else a JSON path
	TraceID           string
	FirstFailedAt     string // as written; epoch-millis values are rendered as RFC 3339 UTC
	Convention        string // ConventionSpringDLT, …RetryTopic, …CloudStream, ConventionPlain or ConventionCustom
}

// HeaderNames lists, per logical dead-letter field, the header names to read, best first. A field
// takes the value of the first listed name present on the record; when that header is repeated,
// its last occurrence wins (Spring appends a fresh set on every hop). Names match case-insensitively.
type HeaderNames struct {
	OriginalTopic     []string
	OriginalPartition []string
	OriginalOffset    []string
	OriginalTimestamp []string
	ConsumerGroup     []string
	ExceptionType     []string
	ExceptionCause    []string
	ExceptionMessage  []string
	Stacktrace        []string
	RetryCount        []string
	MessageID         []string
	TraceID           []string
	FirstFailedAt     []string
}

// DefaultHeaderNames are the names written by Spring Kafka (DLT and @RetryableTopic), the Spring
// Cloud Stream Kafka binder, and the seed's plain convention.
func DefaultHeaderNames() HeaderNames {
	return HeaderNames{
		OriginalTopic:     []string{"kafka_dlt-original-topic", "kafka_original-topic", "x-original-topic", "originalTopic"},
		OriginalPartition: []string{"kafka_dlt-original-partition", "kafka_original-partition", "x-original-partition", "originalPartition"},
		OriginalOffset:    []string{"kafka_dlt-original-offset", "kafka_original-offset", "x-original-offset", "originalOffset"},
		OriginalTimestamp: []string{"kafka_dlt-original-timestamp", "kafka_original-timestamp", "x-original-timestamp"},
		ConsumerGroup:     []string{"kafka_dlt-original-consumer-group", "kafka_original-consumer-group", "consumer"},
		ExceptionType:     []string{"kafka_dlt-exception-fqcn", "kafka_exception-fqcn", "x-exception-fqcn", "lastErrorType"},
		ExceptionCause:    []string{"kafka_dlt-exception-cause-fqcn", "kafka_exception-cause-fqcn"},
		ExceptionMessage:  []string{"kafka_dlt-exception-message", "kafka_exception-message", "x-exception-message", "lastErrorMessage"},
		Stacktrace:        []string{"kafka_dlt-exception-stacktrace", "kafka_exception-stacktrace", "x-exception-stacktrace"},
		RetryCount:        []string{"retry_topic-attempts", "retryCount"},
		MessageID:         []string{"originalMessageId"},
		TraceID:           []string{"traceId"},
		FirstFailedAt:     []string{"firstFailedAt"},
	}
}

// fields maps the configuration keys (kafka[].headers) to the lists.
func (n *HeaderNames) fields() map[string]*[]string {
	return map[string]*[]string{
		"original_topic":     &n.OriginalTopic,
		"original_partition": &n.OriginalPartition,
		"original_offset":    &n.OriginalOffset,
		"original_timestamp": &n.OriginalTimestamp,
		"consumer_group":     &n.ConsumerGroup,
		"exception_type":     &n.ExceptionType,
		"exception_cause":    &n.ExceptionCause,
		"exception_message":  &n.ExceptionMessage,
		"stacktrace":         &n.Stacktrace,
		"retry_count":        &n.RetryCount,
		"message_id":         &n.MessageID,
		"trace_id":           &n.TraceID,
		"first_failed_at":    &n.FirstFailedAt,
	}
}

// Merge returns n with the configured names (configs.KafkaCluster.Headers: logical field → header
// names) tried before n's own, which stay as fallbacks. An unknown field is an ops.ErrInvalid
// naming it and the valid keys.
func (n HeaderNames) Merge(configured map[string][]string) (HeaderNames, error) {
	out := n.clone()
	fields := out.fields()
	keys := slices.Sorted(maps.Keys(configured))
	for _, k := range keys {
		dst, ok := fields[k]
		if !ok {
			valid := slices.Sorted(maps.Keys(fields))
			return HeaderNames{}, ops.Invalid("headers."+k, "unknown field; valid: "+strings.Join(valid, ", "))
		}
		merged := make([]string, 0, len(configured[k])+len(*dst))
		seen := map[string]bool{}
		for _, name := range append(append([]string{}, configured[k]...), *dst...) {
			if l := strings.ToLower(name); name != "" && !seen[l] {
				seen[l] = true
				merged = append(merged, name)
			}
		}
		*dst = merged
	}
	return out, nil
}

func (n HeaderNames) clone() HeaderNames {
	out := n
	for _, p := range out.fields() {
		*p = append([]string(nil), *p...)
	}
	return out
}

// LastHeader is the last value of the first of names present (case-insensitive), trimmed, as
// text; "" when none has a value. The message_id rules read a record's headers this way, so
// anything else that reads an id or a trace id from headers finds what the decoding finds.
func LastHeader(headers []Header, names []string) string {
	for _, name := range names {
		for i := len(headers) - 1; i >= 0; i-- {
			if strings.EqualFold(headers[i].Key, name) {
				if v := strings.TrimSpace(Text(headers[i].Value)); v != "" {
					return v
				}
				break
			}
		}
	}
	return ""
}

// String is a short description for logs: "spring-dlt from orders[3]@812: java.lang.IllegalStateException".
func (d *DeadLetter) String() string {
	if d == nil {
		return "<not a dead letter>"
	}
	loc := d.OriginalTopic
	if d.OriginalPartition != nil {
		loc += fmt.Sprintf("[%d]", *d.OriginalPartition)
	}
	if d.OriginalOffset != nil {
		loc += fmt.Sprintf("@%d", *d.OriginalOffset)
	}
	return fmt.Sprintf("%s from %s: %s", d.Convention, loc, d.ExceptionType)
}

// Text is b as a string with invalid UTF-8 replaced, so it is safe to compare, encode and render:
// header bytes as the model and the adapter read them.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
