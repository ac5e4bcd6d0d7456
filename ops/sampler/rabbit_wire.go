package sampler

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/rabbit/rabbitmodel"
)

// A RabbitMQ snapshot is stored as this package's own JSON, with short keys and empty fields left
// out: 2,000 queues are a few hundred kilobytes that decode in milliseconds. The time fields live
// in the snapshot row's columns. rabbitWireVersion changes when the layout does; an unknown
// version reads as "not sampled yet" until the leader writes the new layout on its next tick.
const rabbitWireVersion = 1

type wireRabbit struct {
	V      int             `json:"v"`
	Queues []wireQueue     `json:"q"`
	Edges  []wireEdge      `json:"e"`
	Loops  []wireRetryLoop `json:"l"`
	Gone   []wireGone      `json:"g,omitempty"` // queues.Snapshot.Gone, times in Unix microseconds
}

type wireGone struct {
	Vhost     string `json:"vh"`
	Name      string `json:"n"`
	DeletedAt int64  `json:"da"`
	Held      int64  `json:"h,omitempty"`
	Lost      int64  `json:"lo,omitempty"`
	LostSince int64  `json:"ls,omitempty"`
	LostAt    int64  `json:"la,omitempty"`
}

type wireQueue struct {
	Vhost          string            `json:"vh"`
	Name           string            `json:"n"`
	Type           string            `json:"t,omitempty"`
	State          string            `json:"s,omitempty"`
	Ready          int64             `json:"r,omitempty"`
	Unacked        int64             `json:"u,omitempty"`
	Total          int64             `json:"m,omitempty"`
	Consumers      int64             `json:"c,omitempty"`
	PublishRate    float64           `json:"pr,omitempty"`
	DeliverRate    float64           `json:"dr,omitempty"`
	AckRate        float64           `json:"ar,omitempty"`
	RedeliverRate  float64           `json:"rr,omitempty"`
	DLX            string            `json:"dlx,omitempty"`
	HasDLX         bool              `json:"hdlx,omitempty"`
	DLRK           string            `json:"dlrk,omitempty"`
	DLSource       string            `json:"dls,omitempty"`
	TTL            *int64            `json:"ttl,omitempty"`
	DeliveryLimit  *int64            `json:"dlim,omitempty"`
	MaxLength      *int64            `json:"ml,omitempty"`
	Overflow       string            `json:"of,omitempty"`
	SAC            bool              `json:"sac,omitempty"`
	Policy         string            `json:"p,omitempty"`
	OperatorPolicy string            `json:"op,omitempty"`
	DLQ            bool              `json:"dlq,omitempty"`
	Retry          bool              `json:"rt,omitempty"`
	Growing        bool              `json:"g,omitempty"`
	Growth         string            `json:"gw,omitempty"`
	Inflow         float64           `json:"in,omitempty"`
	Args           map[string]string `json:"a,omitempty"`
	// A dead-letter queue's loss (queues.Queue.Lost; times in Unix microseconds) and the
	// sampler's track of it: Redrive's moves as counted at this sample (absent when unknown)
	// and the credit carried to the next.
	Lost      int64  `json:"lo,omitempty"`
	LostSince int64  `json:"ls,omitempty"`
	LostAt    int64  `json:"la,omitempty"`
	HeldSince int64  `json:"hs,omitempty"` // queues.Queue.HeldSince, Unix microseconds
	Moved     *int64 `json:"mv,omitempty"`
	Credit    int64  `json:"cr,omitempty"`
	// Statistics the broker did not report (rabbitmodel.Queue), and the last counts it did
	// (queues.Queue.LastCounted, its time in Unix microseconds).
	CountsUnreported    bool  `json:"cu,omitempty"`
	ConsumersUnreported bool  `json:"ccu,omitempty"`
	StatsDisabled       bool  `json:"sd,omitempty"`
	LastCountedAt       int64 `json:"lca,omitempty"`
	LastCountedReady    int64 `json:"lcr,omitempty"`
	LastCountedUnacked  int64 `json:"lcu,omitempty"`
	// rabbitmodel.Queue's Exclusive and dead-letter strategy.
	Exclusive      bool   `json:"ex,omitempty"`
	DLStrategy     string `json:"dlst,omitempty"`
	DLAsked        string `json:"dlsa,omitempty"`
	DeadLetterHeld int64  `json:"dlh,omitempty"`
}

// wireEdge keeps nil and empty slices apart (no omitempty on them), so a decoded edge equals the
// sampled one.
type wireEdge struct {
	FromVhost    string   `json:"fv"`
	FromQueue    string   `json:"fq"`
	Exchange     string   `json:"x"`
	ExchangeType string   `json:"xt,omitempty"`
	RoutingKey   string   `json:"rk,omitempty"`
	OwnKeys      []string `json:"ok"`
	ToQueues     []string `json:"to"`
	AllBound     bool     `json:"all,omitempty"`
	Missing      bool     `json:"miss,omitempty"`
	Note         string   `json:"note,omitempty"`
}

type wireRetryLoop struct {
	Vhost      string `json:"vh"`
	RetryQueue string `json:"r"`
	WorkQueue  string `json:"w"`
	Delay      int64  `json:"d"` // nanoseconds
}

// encodeRabbit encodes s with the sampler's tracks of its dead-letter queues (nil: none).
func encodeRabbit(s queues.Snapshot, tracks map[rabbitmodel.QueueRef]dlqTrack) ([]byte, error) {
	w := wireRabbit{V: rabbitWireVersion, Queues: make([]wireQueue, len(s.Queues)),
		Edges: make([]wireEdge, len(s.Edges)), Loops: make([]wireRetryLoop, len(s.RetryLoops))}
	for i, q := range s.Queues {
		w.Queues[i] = wireQueue{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State, Ready: q.Ready,
			Unacked: q.Unacked, Total: q.Total, Consumers: q.Consumers, PublishRate: q.PublishRate,
			DeliverRate: q.DeliverRate, AckRate: q.AckRate, RedeliverRate: q.RedeliverRate,
			DLX: q.DeadLetterExchange, HasDLX: q.HasDeadLetterExchange, DLRK: q.DeadLetterRoutingKey,
			DLSource: q.DeadLetterSource, TTL: q.MessageTTL, DeliveryLimit: q.DeliveryLimit, MaxLength: q.MaxLength,
			Overflow: q.Overflow, SAC: q.SingleActiveConsumer, Policy: q.Policy, OperatorPolicy: q.OperatorPolicy,
			DLQ: q.IsDeadLetterQueue, Retry: q.Retry, Growing: q.Growing, Growth: q.Growth, Inflow: q.Inflow, Args: q.Arguments,
			Lost: q.Lost, LostSince: unixMicro(q.LostSince), LostAt: unixMicro(q.LostAt), HeldSince: unixMicro(q.HeldSince),
			CountsUnreported: q.CountsUnreported, ConsumersUnreported: q.ConsumersUnreported, StatsDisabled: q.StatsDisabled,
			LastCountedAt: unixMicro(q.LastCounted.At), LastCountedReady: q.LastCounted.Ready, LastCountedUnacked: q.LastCounted.Unacked,
			Exclusive: q.Exclusive, DLStrategy: q.DeadLetterStrategy, DLAsked: q.DeadLetterAsked, DeadLetterHeld: q.DeadLetterHeld}
		if tr, ok := tracks[q.Ref()]; ok && tr.based {
			w.Queues[i].Moved, w.Queues[i].Credit = &tr.moved, tr.credit
		}
	}
	for i, e := range s.Edges {
		w.Edges[i] = wireEdge(e)
	}
	for i, l := range s.RetryLoops {
		w.Loops[i] = wireRetryLoop{Vhost: l.Vhost, RetryQueue: l.RetryQueue, WorkQueue: l.WorkQueue, Delay: int64(l.Delay)}
	}
	for _, g := range s.Gone {
		w.Gone = append(w.Gone, wireGone{Vhost: g.Vhost, Name: g.Name, DeletedAt: unixMicro(g.DeletedAt), Held: g.Held,
			Lost: g.Lost, LostSince: unixMicro(g.LostSince), LostAt: unixMicro(g.LostAt)})
	}
	return json.Marshal(w)
}

// decodeRabbit reads a stored snapshot's queues and topology (At and the error fields come from
// the row); ok is false for a layout this version does not know (or the "{}" of a broker that
// never had a good sample).
func decodeRabbit(data []byte) (snap queues.Snapshot, ok bool, err error) {
	var w wireRabbit
	if err := json.Unmarshal(data, &w); err != nil {
		return queues.Snapshot{}, false, fmt.Errorf("decode snapshot: %w", err)
	}
	if w.V != rabbitWireVersion {
		return queues.Snapshot{}, false, nil
	}
	snap.Queues = make([]queues.Queue, len(w.Queues))
	for i, q := range w.Queues {
		if q.Args == nil {
			q.Args = map[string]string{}
		}
		snap.Queues[i] = queues.Queue{Queue: rabbitmodel.Queue{Vhost: q.Vhost, Name: q.Name, Type: q.Type, State: q.State,
			Ready: q.Ready, Unacked: q.Unacked, Total: q.Total, Consumers: q.Consumers, PublishRate: q.PublishRate,
			DeliverRate: q.DeliverRate, AckRate: q.AckRate, RedeliverRate: q.RedeliverRate,
			DeadLetterExchange: q.DLX, HasDeadLetterExchange: q.HasDLX, DeadLetterRoutingKey: q.DLRK,
			DeadLetterSource: q.DLSource, MessageTTL: q.TTL, DeliveryLimit: q.DeliveryLimit, MaxLength: q.MaxLength,
			Overflow: q.Overflow, SingleActiveConsumer: q.SAC, Policy: q.Policy, OperatorPolicy: q.OperatorPolicy,
			IsDeadLetterQueue: q.DLQ, Arguments: q.Args, CountsUnreported: q.CountsUnreported,
			ConsumersUnreported: q.ConsumersUnreported, StatsDisabled: q.StatsDisabled, Exclusive: q.Exclusive,
			DeadLetterStrategy: q.DLStrategy, DeadLetterAsked: q.DLAsked, DeadLetterHeld: q.DeadLetterHeld},
			LastCounted: queues.Counted{At: fromUnixMicro(q.LastCountedAt), Ready: q.LastCountedReady, Unacked: q.LastCountedUnacked},
			Retry:       q.Retry, Growing: q.Growing, Growth: q.Growth,
			Inflow: max(q.Inflow, q.PublishRate), // a snapshot stored before Inflow: the publish rate
			Lost:   q.Lost, LostSince: fromUnixMicro(q.LostSince), LostAt: fromUnixMicro(q.LostAt),
			HeldSince: fromUnixMicro(q.HeldSince)}
	}
	snap.Edges = make([]rabbitmodel.Edge, len(w.Edges))
	for i, e := range w.Edges {
		snap.Edges[i] = rabbitmodel.Edge(e)
	}
	snap.RetryLoops = make([]rabbitmodel.RetryLoop, len(w.Loops))
	for i, l := range w.Loops {
		snap.RetryLoops[i] = rabbitmodel.RetryLoop{Vhost: l.Vhost, RetryQueue: l.RetryQueue, WorkQueue: l.WorkQueue, Delay: time.Duration(l.Delay)}
	}
	for _, g := range w.Gone {
		snap.Gone = append(snap.Gone, queues.GoneQueue{Vhost: g.Vhost, Name: g.Name, DeletedAt: fromUnixMicro(g.DeletedAt), Held: g.Held,
			Lost: g.Lost, LostSince: fromUnixMicro(g.LostSince), LostAt: fromUnixMicro(g.LostAt)})
	}
	return snap, true, nil
}

// decodeTracks reads the sampler's tracks of the dead-letter queues back from a stored snapshot
// sampled at at, for a replica that takes the broker over: the losses go on, and the first
// sample compares with the last one stored.
func decodeTracks(data []byte, at time.Time) (map[rabbitmodel.QueueRef]dlqTrack, error) {
	tracks := map[rabbitmodel.QueueRef]dlqTrack{}
	var w wireRabbit
	if err := json.Unmarshal(data, &w); err != nil {
		return tracks, fmt.Errorf("decode snapshot: %w", err)
	}
	if w.V != rabbitWireVersion {
		return tracks, nil
	}
	for _, q := range w.Queues {
		if !q.DLQ {
			continue
		}
		tr := dlqTrack{at: at, lost: q.Lost, lostSince: fromUnixMicro(q.LostSince), lostAt: fromUnixMicro(q.LostAt),
			heldSince: fromUnixMicro(q.HeldSince), wasEmpty: q.Ready+q.Unacked <= 0}
		if q.CountsUnreported { // its zeros are no counts: as the last sample that had them left it
			tr.at, tr.wasEmpty = fromUnixMicro(q.LastCountedAt), q.LastCountedAt != 0 && q.LastCountedReady+q.LastCountedUnacked <= 0
		} else if q.Moved != nil {
			tr.based, tr.depth, tr.moved, tr.credit = true, q.Ready+q.Unacked, *q.Moved, q.Credit
		}
		tracks[rabbitmodel.QueueRef{Vhost: q.Vhost, Name: q.Name}] = tr
	}
	for _, g := range w.Gone {
		tracks[rabbitmodel.QueueRef{Vhost: g.Vhost, Name: g.Name}] = dlqTrack{at: at, deletedAt: fromUnixMicro(g.DeletedAt),
			held: g.Held, lost: g.Lost, lostSince: fromUnixMicro(g.LostSince), lostAt: fromUnixMicro(g.LostAt)}
	}
	return tracks, nil
}

// decodeCounted reads each queue's last reported counts back from a stored snapshot sampled at at
// (queues.Queue.LastCounted), for a replica that takes the broker over; none when it cannot.
func decodeCounted(data []byte, at time.Time) map[rabbitmodel.QueueRef]queues.Counted {
	counted := map[rabbitmodel.QueueRef]queues.Counted{}
	var w wireRabbit
	if json.Unmarshal(data, &w) != nil || w.V != rabbitWireVersion {
		return counted
	}
	for _, q := range w.Queues {
		ref := rabbitmodel.QueueRef{Vhost: q.Vhost, Name: q.Name}
		switch {
		case !q.CountsUnreported:
			counted[ref] = queues.Counted{At: at, Ready: q.Ready, Unacked: q.Unacked}
		case q.LastCountedAt != 0:
			counted[ref] = queues.Counted{At: fromUnixMicro(q.LastCountedAt), Ready: q.LastCountedReady, Unacked: q.LastCountedUnacked}
		}
	}
	return counted
}

func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromUnixMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
