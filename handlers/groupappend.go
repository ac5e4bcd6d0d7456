package handlers

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
)

// appendGroupJSON appends g as json.Marshal(toGroupJSON(g)) encodes it, byte for byte, without
// encoding/json's reflection or toGroupJSON's copy: the all-groups answer is re-encoded for
// every new sample (10,000 partitions at 200 groups × 50), behind readers on the same CPU, and
// the reflective encoding was most of that work and its garbage. toGroupJSON stays the answer's
// definition (the one-group answer and the OpenAPI document are its); this is a faster way to
// write the same bytes, and TestAppendGroupIsMarshal and FuzzAppendGroupIsMarshal hold it to
// that. ok is false, with b unchanged, for a group it does not write the same way — a float that
// is not a number or a time outside years 0–9999, which json.Marshal refuses — so the caller
// encodes that one with encoding/json and gets its answer, error included.
func appendGroupJSON(b []byte, g lag.Group) (_ []byte, ok bool) {
	start := len(b)
	kind := g.Kind()
	share := kind == kafkamodel.GroupShare
	b = append(b, `{"group":`...)
	b = appendJSONString(b, g.Name)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, kind)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, g.State)
	b = append(b, `,"protocol":`...)
	b = appendJSONString(b, g.Protocol)
	b = append(b, `,"members":`...)
	b = strconv.AppendInt(b, int64(g.Members), 10)
	b = append(b, `,"total_lag":`...)
	b = strconv.AppendInt(b, g.TotalLag, 10)
	b = append(b, `,"max_lag_seconds":`...)
	b = appendJSONSeconds(b, g.MaxTimeLag)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(g.Status.Code))
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, g.Status.Reason)
	b = append(b, `,"status_since":`...)
	if b, ok = appendJSONTime(b, g.Status.Since); !ok {
		return b[:start], false
	}
	b = append(b, `,"rate_per_second":`...)
	if !g.RateKnown {
		b = append(b, "null"...)
	} else if b, ok = appendJSONFloat(b, g.Rate); !ok {
		return b[:start], false
	}
	b = append(b, `,"catch_up_seconds":`...)
	if !g.RateKnown || g.CatchUp < 0 {
		b = append(b, "null"...)
	} else {
		b, _ = appendJSONFloat(b, g.CatchUp.Seconds()) // a Duration's seconds are always a number
	}
	if g.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, g.Error)
	}
	b = append(b, `,"group_epoch":`...)
	if kind == kafkamodel.GroupClassic {
		b = append(b, `null,"assignment_epoch":null`...)
	} else {
		b = strconv.AppendInt(b, int64(g.Epoch), 10)
		b = append(b, `,"assignment_epoch":`...)
		b = strconv.AppendInt(b, int64(g.AssignmentEpoch), 10)
	}
	if share && g.DeliveryLimit > 0 {
		b = append(b, `,"delivery_count_limit":`...)
		b = strconv.AppendInt(b, int64(g.DeliveryLimit), 10)
		if g.DeliveryLimitFrom != "" {
			b = append(b, `,"delivery_count_limit_from":`...)
			b = appendJSONString(b, g.DeliveryLimitFrom)
		}
	}
	b = append(b, `,"topics":[`...)
	for i, t := range g.Topics {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"topic":`...)
		b = appendJSONString(b, t.Topic)
		b = append(b, `,"lag":`...)
		b = strconv.AppendInt(b, t.Lag, 10)
		b = append(b, `,"max_lag_seconds":`...)
		b = appendJSONSeconds(b, t.MaxTimeLag)
		b = append(b, `,"partitions":[`...)
		for j, p := range t.Partitions {
			if j > 0 {
				b = append(b, ',')
			}
			st := g.PartitionStatus(t.Topic, p.Partition)
			b = append(b, `{"partition":`...)
			b = strconv.AppendInt(b, int64(p.Partition), 10)
			if share {
				b = append(b, `,"committed":null,"share_start_offset":`...)
				b = strconv.AppendInt(b, p.ShareStart, 10)
			} else {
				b = append(b, `,"committed":`...)
				b = strconv.AppendInt(b, p.Committed, 10)
			}
			b = append(b, `,"start":`...)
			b = strconv.AppendInt(b, p.Start, 10)
			b = append(b, `,"end":`...)
			b = strconv.AppendInt(b, p.End, 10)
			b = append(b, `,"lag":`...)
			b = strconv.AppendInt(b, p.Lag, 10)
			if p.LagAtMost {
				b = append(b, `,"lag_at_most":true`...)
			}
			b = append(b, `,"lag_seconds":`...)
			b = appendJSONSeconds(b, p.TimeLag)
			b = append(b, `,"status":`...)
			b = appendJSONString(b, string(st.Code))
			if st.Reason != "" {
				b = append(b, `,"reason":`...)
				b = appendJSONString(b, st.Reason)
			}
			if p.Member != "" {
				b = append(b, `,"member":`...)
				b = appendJSONString(b, p.Member)
			}
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...), true
}

// appendJSONSeconds appends a time lag as seconds (secondsOf), null when unknown.
func appendJSONSeconds(b []byte, d time.Duration) []byte {
	s, known := secondsOf(d)
	if !known {
		return append(b, "null"...)
	}
	b, _ = appendJSONFloat(b, s) // whole milliseconds over 1000: always a number
	return b
}

// appendJSONFloat appends f as encoding/json writes a float64 (ES6 number to string: %f, or %e
// outside [1e-6, 1e21) with its exponent unpadded); false for NaN and ±Inf, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9
		b = b[:n-1]
	}
	return b, true
}

// appendJSONTime appends t as knownUTC(t) encodes: null when zero, else RFC 3339 in UTC with
// the nanoseconds it has (time.Time's MarshalJSON); false for a year it refuses (outside 0–9999).
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	if t.IsZero() {
		return append(b, "null"...), true
	}
	out, err := t.UTC().AppendText(append(b, '"'))
	if err != nil {
		return b, false
	}
	return append(out, '"'), true
}

// appendJSONString appends s quoted as encoding/json does by default (HTML-safe). A string of
// printable ASCII with nothing to escape, as names, states and reasons are, is copied as it is;
// any other is escaped below, following encoding/json's appendString
// rule for rule (control bytes, <, >, &, invalid UTF-8 as U+FFFD, U+2028 and U+2029).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control bytes, and <, > and & (HTML-safe)
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// jsonSafe holds the ASCII bytes encoding/json copies into a string unescaped (HTML-safe): every
// printable one but ", \, <, > and &.
var jsonSafe = func() (safe [0x80]bool) {
	for c := 0x20; c < 0x7f; c++ {
		safe[c] = true
	}
	safe[0x7f] = true // DEL is not escaped by encoding/json
	for _, c := range `"\<>&` {
		safe[c] = false
	}
	return safe
}()
