package replay

import (
	"strconv"
	"strings"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// headerRewriter is the one rewrite of a replayed message's headers, whatever the broker: the
// headers that tell the failed attempt's story go (the prefixes of replay.strip_headers, any
// case), Redrive's own go and are written anew (stamp), every other header is kept.
type headerRewriter struct {
	prefixes []string // lower-case; the first is Redrive's own
}

func newHeaderRewriter(stripPrefixes []string) headerRewriter {
	r := headerRewriter{prefixes: []string{"x-redrive-"}}
	for _, p := range stripPrefixes {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			r.prefixes = append(r.prefixes, p)
		}
	}
	return r
}

// drops reports whether a replay leaves out the header named key.
func (r headerRewriter) drops(key string) bool {
	k := strings.ToLower(key)
	for _, p := range r.prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// stamp is Redrive's headers on a replay of it by job, in the order they are written; source
// names where it was read (a DLT's topic/partition/offset, a DLQ's vhost/queue).
func stamp(job Job, it Item, source string) [4][2]string {
	return [4][2]string{{HeaderReplayID, job.ID}, {HeaderReplayCount, strconv.Itoa(it.ReplayCount + 1)},
		{HeaderReplayedBy, job.Actor}, {HeaderSource, source}}
}

// kafka rewrites a record's headers, in their order, Redrive's after them.
func (r headerRewriter) kafka(in []kafkamodel.Header, job Job, it Item, source string) []kafkamodel.Header {
	out := make([]kafkamodel.Header, 0, len(in)+4)
	for _, h := range in {
		if !r.drops(h.Key) {
			out = append(out, h)
		}
	}
	for _, h := range stamp(job, it, source) {
		out = append(out, kafkamodel.Header{Key: h[0], Value: []byte(h[1])})
	}
	return out
}

// rabbit rewrites a message's headers. The broker's own record of the deaths (x-death,
// x-first-death-*, x-last-death-*) goes too, whatever replay.strip_headers says: the message
// starts a new life, and the broker would otherwise count the old deaths as its own.
func (r headerRewriter) rabbit(in map[string]any, job Job, it Item, source string) map[string]any {
	own := stamp(job, it, source)
	out := make(map[string]any, len(in)+len(own))
	for k, v := range in {
		lk := strings.ToLower(k)
		if r.drops(k) || lk == "x-death" || strings.HasPrefix(lk, "x-first-death-") || strings.HasPrefix(lk, "x-last-death-") {
			continue
		}
		out[k] = v
	}
	for _, h := range own {
		out[h[0]] = h[1]
	}
	return out
}
