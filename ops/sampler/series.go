package sampler

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/redrive/redrive/ops/lag"
)

// series is one partition's status window, packed: each sample's five fields (time, committed and
// end offsets, lag, time lag) as zigzag varints of the difference from the sample before (the
// first from zero). At 200 groups × 50 partitions the leader holds 10,000 windows of about 22
// samples; as []lag.Sample (56 bytes each, in arrays regrown by doubling) they were 20 of its
// 31 MiB of live heap. Packed, a sample a second apart with offsets that moved a little takes
// about 13 bytes. A round unpacks each window into one reused buffer, judges it and packs it again
// (a few milliseconds for 10,000 partitions), so the packed form is the only one kept.
type series []byte

// zeroAt stands for a zero time.Time, whose UnixNano is undefined.
const zeroAt = math.MinInt64

func atNanos(t time.Time) int64 {
	if t.IsZero() {
		return zeroAt
	}
	return t.UnixNano()
}

// pack appends samples to dst[:0] (reusing its array) and returns it.
func pack(dst series, samples []lag.Sample) series {
	dst = dst[:0]
	var prev [5]int64
	for _, s := range samples {
		cur := [5]int64{atNanos(s.At), s.Committed, s.End, s.Lag, int64(s.TimeLag)}
		for i, v := range cur {
			// Differences wrap around for extreme values (zeroAt); unpacking wraps them back.
			dst = binary.AppendVarint(dst, v-prev[i])
		}
		prev = cur
	}
	return dst
}

// unpack appends the samples of s to dst.
func (s series) unpack(dst []lag.Sample) []lag.Sample {
	var cur [5]int64
	for len(s) > 0 {
		for i := range cur {
			d, n := binary.Varint(s)
			if n <= 0 { // never written by pack; a window is only ever packed here
				panic("sampler: corrupt packed window")
			}
			cur[i] += d
			s = s[n:]
		}
		var at time.Time
		if cur[0] != zeroAt {
			at = time.Unix(0, cur[0])
		}
		dst = append(dst, lag.Sample{At: at, Committed: cur[1], End: cur[2], Lag: cur[3], TimeLag: time.Duration(cur[4])})
	}
	return dst
}
