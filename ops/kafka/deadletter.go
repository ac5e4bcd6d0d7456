package kafka

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// maxDeadLetterTimestampMillis is 9999-12-31T23:59:59.999Z; later times do not encode as JSON.
const maxDeadLetterTimestampMillis = 253402300799999

type dlField int

const (
	fOriginalTopic dlField = iota
	fOriginalPartition
	fOriginalOffset
	fOriginalTimestamp
	fConsumerGroup
	fExceptionType
	fExceptionCause
	fExceptionMessage
	fStacktrace
	fRetryCount
	fMessageID
	fTraceID
	fFirstFailedAt
	nFields
)

// headerLists is n's lists in dlField order.
func headerLists(n *HeaderNames) [nFields][]string {
	return [nFields][]string{
		n.OriginalTopic, n.OriginalPartition, n.OriginalOffset, n.OriginalTimestamp, n.ConsumerGroup,
		n.ExceptionType, n.ExceptionCause, n.ExceptionMessage, n.Stacktrace, n.RetryCount,
		n.MessageID, n.TraceID, n.FirstFailedAt,
	}
}

// conventionOf names the convention of a default header name; other names are ConventionCustom.
func conventionOf(lowerName string) string {
	switch {
	case strings.HasPrefix(lowerName, "kafka_dlt-"):
		return ConventionSpringDLT
	case strings.HasPrefix(lowerName, "kafka_original-"), strings.HasPrefix(lowerName, "kafka_exception-"),
		strings.HasPrefix(lowerName, "retry_topic-"):
		return ConventionSpringRetryTopic
	case strings.HasPrefix(lowerName, "x-original-"), strings.HasPrefix(lowerName, "x-exception-"):
		return ConventionSpringCloudStream
	}
	switch lowerName {
	case "originaltopic", "originalpartition", "originaloffset", "originalmessageid", "retrycount",
		"firstfailedat", "lasterrortype", "lasterrormessage", "consumer":
		return ConventionPlain
	}
	return ConventionCustom
}

var conventionRank = map[string]int{
	ConventionSpringDLT: 0, ConventionSpringRetryTopic: 1, ConventionSpringCloudStream: 2, ConventionPlain: 3, ConventionCustom: 4,
}

// DecodeDeadLetter reads the dead-letter metadata from a record's headers (and, for the message id,
// its value). It returns nil when no dead-letter header is present at all; a message-id or trace-id
// header alone does not make a record a dead letter.
//
// Integers are read as decimal text when the value is all digits, else as big-endian binary
// (Spring: partition 4 bytes, offset and timestamp 8 bytes epoch millis, attempts 4 bytes). A
// value that is neither leaves the field nil. Timestamps may also be RFC 3339 text.
func DecodeDeadLetter(headers []Header, value []byte, names HeaderNames, ids configs.MessageIDRules) *DeadLetter {
	return indexNames(&names).decode(headers, idBody{b: value}, ids)
}

// headerIndex is a HeaderNames by lower-case header name: a record's headers are matched with one
// map look-up each, not compared with every configured name. Build it once per configuration.
type headerIndex struct {
	byName    map[string][]namedField
	messageID []string // names.MessageID
}

// namedField is one field a header name stands for, with the name's rank in that field's list.
type namedField struct {
	field      dlField
	rank       int
	convention string
}

// indexNames builds n's headerIndex.
func indexNames(n *HeaderNames) headerIndex {
	idx := headerIndex{byName: map[string][]namedField{}, messageID: n.MessageID}
	for f, list := range headerLists(n) {
		for rank, name := range list {
			l := strings.ToLower(name)
			idx.byName[l] = append(idx.byName[l], namedField{field: dlField(f), rank: rank, convention: conventionOf(l)})
		}
	}
	return idx
}

func (idx headerIndex) decode(headers []Header, value idBody, ids configs.MessageIDRules) *DeadLetter {
	type hit struct {
		ok    bool
		rank  int
		value []byte
	}
	var found [nFields]hit
	convention := ""
	for _, h := range headers {
		for _, nf := range idx.byName[strings.ToLower(h.Key)] {
			// Lower rank wins; equal rank is the same name repeated, and the later one wins.
			if f := nf.field; !found[f].ok || nf.rank <= found[f].rank {
				found[f] = hit{ok: true, rank: nf.rank, value: h.Value}
			}
			// The convention is the most specific one among all dead-letter headers present.
			if nf.field != fTraceID && (convention == "" || conventionRank[nf.convention] < conventionRank[convention]) {
				convention = nf.convention
			}
		}
	}
	if convention == "" {
		return nil
	}

	dl := &DeadLetter{Convention: convention}
	str := func(f dlField) string {
		if !found[f].ok {
			return ""
		}
		return kafkamodel.Text(found[f].value)
	}
	dl.OriginalTopic = str(fOriginalTopic)
	dl.ConsumerGroup = str(fConsumerGroup)
	dl.ExceptionType = str(fExceptionType)
	dl.ExceptionCause = str(fExceptionCause)
	dl.ExceptionMessage = str(fExceptionMessage)
	dl.Stacktrace = str(fStacktrace)
	dl.TraceID = str(fTraceID)
	if h := found[fOriginalPartition]; h.ok {
		if v, ok := parseInt(h.value); ok && v >= 0 && v <= 1<<31-1 {
			p := int32(v)
			dl.OriginalPartition = &p
		}
	}
	if h := found[fOriginalOffset]; h.ok {
		if v, ok := parseInt(h.value); ok && v >= 0 {
			dl.OriginalOffset = &v
		}
	}
	if h := found[fOriginalTimestamp]; h.ok {
		if t, ok := parseTime(h.value); ok {
			dl.OriginalTimestamp = &t
		}
	}
	if h := found[fRetryCount]; h.ok {
		if v, ok := parseInt(h.value); ok && v >= 0 && v <= 1<<31-1 {
			n := int(v)
			dl.RetryCount = &n
		}
	}
	if h := found[fFirstFailedAt]; h.ok {
		if v, ok := parseInt(h.value); ok {
			if t, ok := millisTime(v); ok {
				dl.FirstFailedAt = t.Format(time.RFC3339Nano)
			}
		} else {
			dl.FirstFailedAt = kafkamodel.Text(h.value)
		}
	}
	dl.MessageID = messageID(headers, value, ids, idx.messageID)
	return dl
}

// messageID applies the rules: the configured headers in order (last occurrence of each), then the
// dead-letter names (originalMessageId), then the JSON paths into the value.
func messageID(headers []Header, value idBody, ids configs.MessageIDRules, dlNames []string) string {
	for _, names := range [][]string{ids.Headers, dlNames} {
		if v := LastHeader(headers, names); v != "" {
			return v
		}
	}
	if value.decoded {
		return ops.MessageIDFromValidJSON(value.b, ids.JSONPaths)
	}
	return ops.MessageIDFromJSON(value.b, ids.JSONPaths)
}

// parseInt reads decimal text (optionally signed, surrounding spaces allowed) or a big-endian
// 1-, 2-, 4- or 8-byte integer. Values made only of printable ASCII are text: a binary int whose
// every byte is printable would be above 538 million for 4 bytes (2·10¹⁸ for 8), implausible for
// a partition, an offset, a count or a timestamp in millis, so reading them as text is safe.
func parseInt(b []byte) (int64, bool) {
	if t := strings.TrimSpace(string(b)); t != "" && isDecimal(t) {
		v, err := strconv.ParseInt(t, 10, 64)
		return v, err == nil
	}
	if printableASCII(b) {
		return 0, false // text that is not a number ("many"), not four or eight binary bytes
	}
	switch len(b) {
	case 1:
		return int64(int8(b[0])), true
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b))), true
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b))), true
	case 8:
		return int64(binary.BigEndian.Uint64(b)), true
	}
	return 0, false
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseTime reads epoch millis (decimal or 8-byte binary) or RFC 3339 text.
func parseTime(b []byte) (time.Time, bool) {
	if v, ok := parseInt(b); ok {
		return millisTime(v)
	}
	if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b))); err == nil {
		if ms := t.UnixMilli(); ms >= 0 && ms <= maxDeadLetterTimestampMillis {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func millisTime(ms int64) (time.Time, bool) {
	if ms < 0 || ms > maxDeadLetterTimestampMillis {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}
