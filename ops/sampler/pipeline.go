package sampler

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
)

// Stages of a consumer's pipeline.
const (
	StageMain  = "main"
	StageRetry = "retry"
	StageDLT   = "dlt"
)

// Spring Kafka's names for the topics of one listener: orders, then orders-retry, orders-retry-0,
// orders-retry-5000 or orders-retry-10s (and their dotted forms), then orders-dlt / orders.DLT
// (or .dlq).
var (
	retryName = regexp.MustCompile(`(?i)^(.+?)[.-]retry(?:[.-][0-9a-z]+)?$`)
	dltName   = regexp.MustCompile(`(?i)^(.+?)[.-](?:dlt|dlq)$`)
)

// StageOf is the pipeline a topic belongs to (the main topic's name) and its stage in it, by its
// name; isDLT says the cluster's dead-letter patterns match it (a DLT named otherwise).
func StageOf(topic string, isDLT bool) (base, stage string) {
	if m := dltName.FindStringSubmatch(topic); m != nil {
		return m[1], StageDLT
	}
	if m := retryName.FindStringSubmatch(topic); m != nil {
		return m[1], StageRetry
	}
	if isDLT {
		return topic, StageDLT
	}
	return topic, StageMain
}

// PipelineStage is one topic of a consumer's pipeline: its lag when the group reads it, how fast
// records arrive and how fast the group consumes them.
type PipelineStage struct {
	Topic string
	Stage string // StageMain, StageRetry or StageDLT
	// Consumed is whether the group reads the topic; then Lag and MaxTimeLag are its.
	Consumed   bool
	Lag        int64
	MaxTimeLag int64 // milliseconds; -1 unknown
	// Records is what a dead-letter or retry topic holds (end − start).
	Records int64
	// InflowPerSecond: records produced to the topic per second over the window (a DLT's or
	// retry topic's from the sampler's end offsets, a consumed topic's from the group's
	// partitions); ConsumedPerSecond: what the group consumed of it. Nil when not known.
	InflowPerSecond   *float64
	ConsumedPerSecond *float64
}

// Pipeline is one main topic and the retry topics and DLTs that carry its failures.
type Pipeline struct {
	Base   string
	Stages []PipelineStage // main, then retry topics by name, then DLTs
	// Verdict says in a line whether the pipeline keeps up as a whole: the seed's warning is that
	// the main topic's lag falls while failures pile up in retry topics.
	Verdict string
	// BackedUp is true when a retry stage holds lag or a DLT receives records in the window.
	BackedUp bool
}

// Pipelines are a group's pipelines: for each main topic it reads (or retry topic whose main
// topic it does not), its stages among the topics it reads and the cluster's dead-letter and
// retry topics.
func Pipelines(g lag.Group, dlts []kafkamodel.DLTopic) []Pipeline {
	byBase := map[string]*Pipeline{}
	var order []string
	stageAt := func(base string) *Pipeline {
		p := byBase[base]
		if p == nil {
			p = &Pipeline{Base: base}
			byBase[base] = p
			order = append(order, base)
		}
		return p
	}
	dltOf := map[string]kafkamodel.DLTopic{}
	for _, d := range dlts {
		dltOf[d.Topic] = d
	}
	read := map[string]bool{}
	for _, t := range g.Topics {
		d, isDL := dltOf[t.Topic]
		base, stage := StageOf(t.Topic, isDL && !d.Retry)
		s := PipelineStage{Topic: t.Topic, Stage: stage, Consumed: true, Lag: t.Lag, MaxTimeLag: t.MaxTimeLag.Milliseconds(), Records: d.Records}
		if t.MaxTimeLag < 0 {
			s.MaxTimeLag = -1
		}
		if r, ok := g.TopicRates[t.Topic]; ok && g.RateKnown {
			s.InflowPerSecond, s.ConsumedPerSecond = &r.Produced, &r.Consumed
		}
		p := stageAt(base)
		p.Stages = append(p.Stages, s)
		read[t.Topic] = true
	}
	for _, d := range dlts {
		if read[d.Topic] {
			continue
		}
		base, stage := StageOf(d.Topic, !d.Retry)
		p, ok := byBase[base]
		if !ok {
			continue // another consumer's
		}
		s := PipelineStage{Topic: d.Topic, Stage: stage, Records: d.Records, MaxTimeLag: -1}
		if d.InflowKnown {
			in := d.InflowPerSecond
			s.InflowPerSecond = &in
		}
		p.Stages = append(p.Stages, s)
	}
	out := make([]Pipeline, 0, len(order))
	rank := map[string]int{StageMain: 0, StageRetry: 1, StageDLT: 2}
	for _, base := range order {
		p := byBase[base]
		sort.SliceStable(p.Stages, func(i, j int) bool {
			a, b := p.Stages[i], p.Stages[j]
			if rank[a.Stage] != rank[b.Stage] {
				return rank[a.Stage] < rank[b.Stage]
			}
			return naturalLess(a.Topic, b.Topic)
		})
		if len(p.Stages) < 2 {
			continue // a topic alone is no pipeline: the topics table says it all
		}
		p.Verdict, p.BackedUp = verdict(*p)
		out = append(out, *p)
	}
	return out
}

func verdict(p Pipeline) (string, bool) {
	var mainLag int64
	var waiting, arriving, unread []string
	for _, s := range p.Stages {
		switch {
		case s.Stage == StageMain:
			mainLag += s.Lag
		case s.Stage == StageRetry && s.Consumed && s.Lag > 0:
			waiting = append(waiting, fmt.Sprintf("%s records wait in %s", ops.FormatNum(s.Lag), s.Topic))
		case s.Stage == StageRetry && !s.Consumed && s.Records > 0:
			// Whether they wait is not this group's lag to tell: say what is there and that the
			// group does not read it, rather than "nothing waits".
			unread = append(unread, fmt.Sprintf("%s (%s records)", s.Topic, ops.FormatNum(s.Records)))
		case s.Stage == StageDLT && s.InflowPerSecond != nil && *s.InflowPerSecond > 0:
			arriving = append(arriving, fmt.Sprintf("%s receives %.1f/s", s.Topic, *s.InflowPerSecond))
		}
	}
	trouble := append(waiting, arriving...)
	head := fmt.Sprintf("%s: the main topic's lag is %s", p.Base, ops.FormatNum(mainLag))
	tail := "."
	if len(unread) > 0 {
		tail = "; this group does not read the retry topic " + strings.Join(unread, ", ") + "."
	}
	switch {
	case len(trouble) > 0:
		return head + ", but " + strings.Join(trouble, ", ") + tail, true
	case len(unread) > 0:
		return head + ", and nothing arrives in its DLT" + tail, false
	}
	return head + ", and nothing waits in its retry topics or arrives in its DLT.", false
}

// naturalLess orders orders-retry-2 before orders-retry-10.
func naturalLess(a, b string) bool {
	ta, tb := strings.TrimRight(a, "0123456789"), strings.TrimRight(b, "0123456789")
	if ta == tb && len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
