package handlers

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/kafka"
	"github.com/redrive/redrive/ops/lag"
)

func TestCRC32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {17, 3}, {1000, 70_000}, {3, 1 << 20}} {
		a, b := make([]byte, n[0]), make([]byte, n[1])
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("%v: %08x, want %08x", n, got, want)
		}
	}
}

// Stored and deflated parts concatenate into one stream that Go's inflater (an independent
// decoder of RFC 1951) reads back whole, for heads past a stored block's 65,535 bytes too.
func TestSplicedDeflate(t *testing.T) {
	head := bytes.Repeat([]byte(`{"a":1}`), 20_000) // 140,000 bytes: three stored blocks
	mid := bytes.Repeat([]byte(`[{"group":"billing","lag":12}]`), 5_000)
	tail := []byte("}\n")
	stream := append(append(storedPart(head, false), deflatePart(mid, false)...), storedPart(tail, true)...)
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(stream)))
	if err != nil || !bytes.Equal(got, append(append(append([]byte{}, head...), mid...), tail...)) {
		t.Fatalf("inflate: %d bytes, %v", len(got), err)
	}
}

// The groups are compressed only for gzip readers: identity reads never deflate them; once a gzip
// reader came, each new snapshot's groups are deflated with their encoding (behind the answers),
// so that the next gzip reader finds them compressed instead of waiting for it.
func TestGroupsDeflatedOnlyForGzipReaders(t *testing.T) {
	h := &Kafka{}
	snap := func(at time.Time) lag.Snapshot {
		return lag.Snapshot{Cluster: "main", At: at, Groups: []lag.Group{{Group: kafka.Group{Name: "billing"}}}}
	}
	first, err := h.encodeGroups(snap(time.Unix(100, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if first.deflated != nil {
		t.Fatal("deflated with no gzip reader")
	}
	h.gzipReadAt.Store(time.Now().UnixNano()) // what APIGroups records for a gzip read
	next, err := h.encodeGroups(snap(time.Unix(200, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if next.deflated == nil {
		t.Fatal("not deflated with a gzip reader about")
	}
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(append(next.Deflated(), storedPart(nil, true)...))))
	if err != nil || !bytes.Equal(got, next.text) {
		t.Fatalf("inflate: %q, %v", got, err)
	}
	h.gzipReadAt.Store(time.Now().Add(-gzipReaders).UnixNano())
	if late, err := h.encodeGroups(snap(time.Unix(300, 0))); err != nil || late.deflated != nil {
		t.Fatalf("deflated %v after the gzip readers left (%v)", late.deflated != nil, err)
	}
}

// BenchmarkDeflateGroups deflates the groups of 200 groups × 50 partitions once, as a new
// snapshot's are for gzip readers: the deflater shipped (klauspost/compress) against the
// standard library's at the same level, in one run.
//
//	go test ./handlers -run '^$' -bench DeflateGroups -benchtime 20x -count 3
func BenchmarkDeflateGroups(b *testing.B) {
	part, err := (&Kafka{}).encodeGroups(lag.Snapshot{Cluster: "main", At: time.Unix(100, 0), Groups: benchGroups()})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d bytes of groups", len(part.text))
	b.Run("shipped", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(float64(len(deflatePart(part.text, false))), "bytes")
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			w, _ := flate.NewWriter(&buf, gzipLevel)
			_, _ = w.Write(part.text)
			_ = w.Flush()
			b.ReportMetric(float64(buf.Len()), "bytes")
		}
	})
}

// benchGroups are 200 groups × 50 partitions, each partition with a member.
func benchGroups() []lag.Group {
	groups := make([]lag.Group, 200)
	for g := range groups {
		parts := make([]kafka.PartitionLag, 50)
		for p := range parts {
			parts[p] = kafka.PartitionLag{Partition: int32(p), Committed: int64((g + p) % 20), Start: 0, End: 20,
				Lag: int64(20 - (g+p)%20), TimeLag: time.Duration(g*p) * time.Millisecond, Member: fmt.Sprintf("consumer-%d-%x", g, g*7919)}
		}
		groups[g] = lag.Group{Group: kafka.Group{Name: fmt.Sprintf("group-%03d", g), State: "Stable", Members: 1,
			Topics: []kafka.TopicLag{{Topic: fmt.Sprintf("topic-%02d", g%20), Partitions: parts}}}}
	}
	return groups
}

// BenchmarkEncodeGroups encodes a new snapshot's 200 groups × 50 partitions for the all-groups
// API, as a console does after each re-sample (the cluster's answer before it sized the buffer),
// against the naive way, one json.Marshal of them all, in one run. The answers are the same bytes.
//
//	go test ./handlers -run '^$' -bench EncodeGroups -benchmem -count 3
func BenchmarkEncodeGroups(b *testing.B) {
	groups := benchGroups()
	h := &Kafka{}
	at := time.Unix(100, 0)
	first, err := h.encodeGroups(lag.Snapshot{Cluster: "main", At: at, Groups: groups})
	if err != nil {
		b.Fatal(err)
	}
	naive := func() []byte {
		all := make([]groupJSON, len(groups))
		for i, g := range groups {
			all[i] = toGroupJSON(g)
		}
		out, err := json.Marshal(all)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	if !bytes.Equal(first.text, naive()) {
		b.Fatal("the encoded groups are not json.Marshal's")
	}
	b.Run("shipped", func(b *testing.B) {
		for b.Loop() {
			at = at.Add(time.Second)
			if _, err := h.encodeGroups(lag.Snapshot{Cluster: "main", At: at, Groups: groups}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			naive()
		}
	})
}

// The all-groups answer, encoded a group at a time into one buffer, is byte for byte what
// json.Marshal makes of the same groups — escaping included, with a NUL, a 0xFF byte, markup and
// U+2028 in every string a group carries — both the first time and when the buffer is sized from
// that first answer (a larger snapshot next).
func TestEncodedGroupsAreMarshals(t *testing.T) {
	const hostile = "a\x00b\xffc<script>&\u2028\"\\é"
	groups := benchGroups()[:3]
	for i := range groups {
		g := &groups[i]
		g.Name, g.Protocol, g.Error = hostile+g.Name, hostile, hostile
		g.Status = lag.Status{Code: lag.StatusStall, Reason: hostile, Since: time.Unix(50, 0)}
		g.Partitions = map[string]lag.Status{lag.PartitionKey(g.Topics[0].Topic, 1): {Code: lag.StatusStall, Reason: hostile}}
		g.RateKnown, g.Rate, g.CatchUp = true, 1.5, -1
		g.Topics[0].Topic = hostile + g.Topics[0].Topic
		g.Topics[0].Partitions[0].Member, g.Topics[0].Partitions[0].TimeLag = hostile, -1
	}
	h := &Kafka{}
	for n, at := range []int{1, 3} {
		snap := lag.Snapshot{Cluster: "main", At: time.Unix(int64(100+n), 0), Groups: groups[:at]}
		part, err := h.encodeGroups(snap)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]groupJSON, at)
		for i, g := range snap.Groups {
			all[i] = toGroupJSON(g)
		}
		want, err := json.Marshal(all)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(part.text, want) {
			t.Fatalf("encoding %d of %d groups:\n%s\njson.Marshal:\n%s", n, at, part.text, want)
		}
		if bytes.Contains(part.text, []byte("<script>")) || !json.Valid(part.text) {
			t.Fatalf("markup unescaped or invalid JSON: %.300s", part.text)
		}
	}
}
