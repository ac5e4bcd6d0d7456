package sampler

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
)

// The stored snapshot (snapshot.data) is this package's own compact JSON, not lag.Snapshot
// marshalled as is: partitions are parallel arrays per topic and member names are listed once per
// group, so a 200-group × 50-partition cluster is a few hundred kilobytes that decode in a few
// milliseconds — the cost every page load pays on a cache miss. The time fields live in the
// snapshot row's columns, not here. wireVersion changes when the layout does; an unknown version
// reads as "not sampled yet" until the leader writes the new layout on its next tick.
const wireVersion = 1

type wireSnapshot struct {
	V      int         `json:"v"`
	Groups []wireGroup `json:"groups"`
	DLTs   []wireDLT   `json:"dlt,omitempty"` // absent in snapshots written before DLT sizes were sampled
	Txns   []wireTxn   `json:"tx,omitempty"`  // transactions open when sampled; absent when none (or before they were)
}

// wireTxn is a kafkamodel.OpenTransaction; times are unix milliseconds, durations milliseconds.
type wireTxn struct {
	Topic       string `json:"t"`
	Partition   int32  `json:"p"`
	ProducerID  int64  `json:"pid"`
	Epoch       int16  `json:"pe,omitempty"`
	CoordEpoch  int32  `json:"ce,omitempty"`
	TxnID       string `json:"id,omitempty"`
	State       string `json:"st,omitempty"`
	StartOffset int64  `json:"so"`
	End         int64  `json:"e"`
	Since       int64  `json:"s"`
	SinceKnown  bool   `json:"sk,omitempty"`
	LastWrite   int64  `json:"lw"`
	Timeout     int64  `json:"to,omitempty"`
	Hanging     bool   `json:"h,omitempty"`
	After       int64  `json:"af"`
}

type wireDLT struct {
	Topic    string  `json:"t"`
	ID       string  `json:"id,omitempty"` // the topic's Kafka ID: whose resolutions count (absent before they were kept: every one)
	Retry    bool    `json:"r,omitempty"`
	Parts    []int32 `json:"p"`
	Start    []int64 `json:"s"`
	End      []int64 `json:"e"`
	NewestAt int64   `json:"n,omitempty"`  // unix milliseconds
	Inflow   float64 `json:"in,omitempty"` // records per second over the window
	InflowOK bool    `json:"ik,omitempty"`
	// Stable, Recs and Counted are each partition's last stable offset, counted records and
	// whether the count is exact; absent in snapshots written before records were counted, whose
	// records read as offsets (End − Start), not counted.
	Stable  []int64 `json:"ls,omitempty"`
	Recs    []int64 `json:"rc,omitempty"`
	Counted []bool  `json:"ct,omitempty"`
}

type wireGroup struct {
	Name         string                `json:"n"`
	Type         string                `json:"ty,omitempty"` // kafkamodel.GroupClassic, GroupConsumer or GroupShare; absent in snapshots before types
	Epoch        int32                 `json:"ep,omitempty"`
	AssignEpoch  int32                 `json:"ae,omitempty"`
	MemberList   []wireMember          `json:"ml,omitempty"`
	DeliveryMax  int                   `json:"dl,omitempty"` // a share group's delivery limit
	DeliveryFrom string                `json:"df,omitempty"`
	State        string                `json:"s,omitempty"`
	ProtocolType string                `json:"pt,omitempty"`
	Protocol     string                `json:"p,omitempty"`
	Members      int                   `json:"m,omitempty"`
	TotalLag     int64                 `json:"lag"`
	MaxTimeLag   int64                 `json:"mtl,omitempty"` // milliseconds, -1 unknown
	Error        string                `json:"err,omitempty"`
	Status       lag.StatusCode        `json:"st"`
	Reason       string                `json:"why,omitempty"`
	Since        int64                 `json:"since,omitempty"` // unix microseconds; 0 unknown
	Parts        []wirePartStatus      `json:"ps,omitempty"`    // non-OK partitions only
	Rate         float64               `json:"rate,omitempty"`
	CatchUp      int64                 `json:"cu,omitempty"` // nanoseconds
	RateKnown    bool                  `json:"rk,omitempty"`
	MemberNames  []string              `json:"mn,omitempty"` // indexed by wireTopic.Member
	TopicRates   map[string][2]float64 `json:"tr,omitempty"` // consumed, produced per second
	Topics       []wireTopic           `json:"t"`
}

type wireMember struct {
	ID       string       `json:"id"`
	Instance string       `json:"i,omitempty"`
	Client   string       `json:"c,omitempty"`
	Host     string       `json:"h,omitempty"`
	Epoch    int32        `json:"e,omitempty"`
	Assigned []wireAssign `json:"a,omitempty"`
	Target   []wireAssign `json:"ta,omitempty"`
	Classic  bool         `json:"cl,omitempty"`
}

type wireAssign struct {
	Topic      string  `json:"t"`
	Partitions []int32 `json:"p"`
}

func toWireAssign(tps []kafkamodel.TopicPartitions) []wireAssign {
	if tps == nil {
		return nil
	}
	out := make([]wireAssign, len(tps))
	for i, tp := range tps {
		out[i] = wireAssign{tp.Topic, tp.Partitions}
	}
	return out
}

func fromWireAssign(ws []wireAssign) []kafkamodel.TopicPartitions {
	if ws == nil {
		return nil
	}
	out := make([]kafkamodel.TopicPartitions, len(ws))
	for i, w := range ws {
		out[i] = kafkamodel.TopicPartitions{Topic: w.Topic, Partitions: w.Partitions}
	}
	return out
}

type wirePartStatus struct {
	Topic     string         `json:"t"`
	Partition int32          `json:"p"`
	Code      lag.StatusCode `json:"c"`
	Reason    string         `json:"r,omitempty"`
	Since     int64          `json:"s,omitempty"` // unix microseconds; 0 unknown
}

// wireTopic holds a topic's partitions as parallel arrays: element i of each is one partition.
type wireTopic struct {
	Topic     string   `json:"t"`
	Lag       int64    `json:"lag"`
	Partition []int32  `json:"p"`
	Committed []int64  `json:"c"`
	Start     []int64  `json:"s"`
	End       []int64  `json:"e"`
	Lags      []int64  `json:"l"`
	MaxTime   int64    `json:"mtl,omitempty"` // milliseconds, -1 unknown
	TimeLags  []int64  `json:"tl,omitempty"`  // milliseconds, -1 unknown; absent when every partition is caught up (0)
	Member    []int    `json:"m,omitempty"`   // index into wireGroup.MemberNames, -1 for none; absent when no partition has a member
	Errors    []string `json:"err,omitempty"` // absent when no partition has an error
	// ShareStart are a share group's share-partition start offsets (absent for other groups).
	ShareStart []int64 `json:"ss,omitempty"`
	// AtMost marks a share group's lags that are upper bounds (kafkamodel.PartitionLag.LagAtMost);
	// absent when none is.
	AtMost []bool `json:"am,omitempty"`
}

func encodeKafka(groups []lag.Group, dlts []kafkamodel.DLTopic, txns ...kafkamodel.OpenTransaction) ([]byte, error) {
	w := wireSnapshot{V: wireVersion, Groups: make([]wireGroup, len(groups))}
	for _, t := range dlts {
		d := wireDLT{Topic: t.Topic, ID: t.TopicID, Retry: t.Retry, Inflow: t.InflowPerSecond, InflowOK: t.InflowKnown}
		if !t.NewestAt.IsZero() {
			d.NewestAt = t.NewestAt.UnixMilli()
		}
		for _, p := range t.Partitions {
			d.Parts, d.Start, d.End = append(d.Parts, p.Partition), append(d.Start, p.Start), append(d.End, p.End)
			d.Stable, d.Recs, d.Counted = append(d.Stable, p.Stable), append(d.Recs, p.Records), append(d.Counted, p.Counted)
		}
		w.DLTs = append(w.DLTs, d)
	}
	for _, t := range txns {
		w.Txns = append(w.Txns, wireTxn{Topic: t.Topic, Partition: t.Partition, ProducerID: t.ProducerID, Epoch: t.ProducerEpoch,
			CoordEpoch: t.CoordinatorEpoch, TxnID: t.TransactionalID, State: t.State, StartOffset: t.StartOffset, End: t.End,
			Since: t.Since.UnixMilli(), SinceKnown: t.SinceKnown, LastWrite: t.LastWrite.UnixMilli(), Timeout: t.Timeout.Milliseconds(),
			Hanging: t.Hanging, After: t.After.Milliseconds()})
	}
	for i, g := range groups {
		wg := wireGroup{
			Name: g.Name, State: g.State, ProtocolType: g.ProtocolType, Protocol: g.Protocol,
			Members: g.Members, TotalLag: g.TotalLag, MaxTimeLag: ms(g.MaxTimeLag), Error: g.Error,
			Status: g.Status.Code, Reason: g.Status.Reason, Since: unixMicro(g.Status.Since),
			Rate: g.Rate, CatchUp: int64(g.CatchUp), RateKnown: g.RateKnown,
			Topics: make([]wireTopic, len(g.Topics)),
			Epoch:  g.Epoch, AssignEpoch: g.AssignmentEpoch, DeliveryMax: g.DeliveryLimit, DeliveryFrom: g.DeliveryLimitFrom,
		}
		share := g.Kind() == kafkamodel.GroupShare
		wg.Type = g.Type
		for _, m := range g.MemberList {
			wg.MemberList = append(wg.MemberList, wireMember{ID: m.ID, Instance: m.InstanceID, Client: m.ClientID, Host: m.Host,
				Epoch: m.Epoch, Assigned: toWireAssign(m.Assigned), Target: toWireAssign(m.Target), Classic: m.Classic})
		}
		for topic, r := range g.TopicRates {
			if wg.TopicRates == nil {
				wg.TopicRates = make(map[string][2]float64, len(g.TopicRates))
			}
			wg.TopicRates[topic] = [2]float64{r.Consumed, r.Produced}
		}
		derived := map[string]bool{} // partitions whose status decoding derives again
		if derivable(g.State) {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					key := lag.PartitionKey(t.Topic, p.Partition)
					st, listed := g.Partitions[key]
					switch {
					case listed && st == derive(share, g.State, p):
						derived[key] = true
					case !listed:
						// Decoding would derive a status the group does not have: mask it.
						wg.Parts = append(wg.Parts, wirePartStatus{Topic: t.Topic, Partition: p.Partition, Code: lag.StatusOK})
					}
				}
			}
		}
		for key, st := range g.Partitions {
			if derived[key] {
				continue
			}
			topic, part, err := splitKey(key)
			if err != nil {
				return nil, err
			}
			wg.Parts = append(wg.Parts, wirePartStatus{Topic: topic, Partition: part, Code: st.Code, Reason: st.Reason, Since: unixMicro(st.Since)})
		}
		memberIdx := map[string]int{}
		for j, t := range g.Topics {
			n := len(t.Partitions)
			wt := wireTopic{Topic: t.Topic, Lag: t.Lag, MaxTime: ms(t.MaxTimeLag), Partition: make([]int32, n), Committed: make([]int64, n),
				Start: make([]int64, n), End: make([]int64, n), Lags: make([]int64, n)}
			if share {
				wt.ShareStart = make([]int64, n)
			}
			for k, p := range t.Partitions {
				if share {
					wt.ShareStart[k] = p.ShareStart
				}
				if p.LagAtMost {
					if wt.AtMost == nil {
						wt.AtMost = make([]bool, n)
					}
					wt.AtMost[k] = true
				}
				wt.Partition[k], wt.Committed[k], wt.Start[k], wt.End[k], wt.Lags[k] = p.Partition, p.Committed, p.Start, p.End, p.Lag
				if p.TimeLag != 0 {
					if wt.TimeLags == nil {
						wt.TimeLags = make([]int64, n)
					}
					wt.TimeLags[k] = ms(p.TimeLag)
				}
				if p.Member != "" {
					if wt.Member == nil {
						wt.Member = make([]int, n)
						for m := range wt.Member {
							wt.Member[m] = -1
						}
					}
					idx, ok := memberIdx[p.Member]
					if !ok {
						idx = len(wg.MemberNames)
						memberIdx[p.Member] = idx
						wg.MemberNames = append(wg.MemberNames, p.Member)
					}
					wt.Member[k] = idx
				}
				if p.Error != "" {
					if wt.Errors == nil {
						wt.Errors = make([]string, n)
					}
					wt.Errors[k] = p.Error
				}
			}
			wg.Topics[j] = wt
		}
		w.Groups[i] = wg
	}
	return json.Marshal(w)
}

// decodeKafka reads a stored snapshot's groups; ok is false for a layout this version does not
// know (or the empty "{}" of a cluster that never had a good sample).
func decodeKafka(data []byte) (groups []lag.Group, dlts []kafkamodel.DLTopic, ok bool, err error) {
	groups, dlts, _, ok, err = decodeKafkaSnapshot(data)
	return groups, dlts, ok, err
}

// decodeKafkaSnapshot is decodeKafka with the transactions open when sampled.
func decodeKafkaSnapshot(data []byte) (groups []lag.Group, dlts []kafkamodel.DLTopic, txns []kafkamodel.OpenTransaction, ok bool, err error) {
	var w wireSnapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, nil, nil, false, fmt.Errorf("decode snapshot: %w", err)
	}
	if w.V != wireVersion {
		return nil, nil, nil, false, nil
	}
	for _, d := range w.DLTs {
		counted := d.Recs != nil
		if len(d.Start) != len(d.Parts) || len(d.End) != len(d.Parts) ||
			(counted && (len(d.Stable) != len(d.Parts) || len(d.Recs) != len(d.Parts) || len(d.Counted) != len(d.Parts))) {
			return nil, nil, nil, false, fmt.Errorf("decode snapshot: dead-letter topic %q: arrays of different lengths", d.Topic)
		}
		t := kafkamodel.DLTopic{Topic: d.Topic, TopicID: d.ID, Retry: d.Retry, InflowPerSecond: d.Inflow, InflowKnown: d.InflowOK, Counted: counted}
		if d.NewestAt != 0 {
			t.NewestAt = time.UnixMilli(d.NewestAt).UTC()
		}
		for i, p := range d.Parts {
			// A snapshot from before records were counted has offsets: the most there can be.
			dp := kafkamodel.DLPartition{Partition: p, Start: d.Start[i], End: d.End[i], Stable: d.End[i], Records: d.End[i] - d.Start[i]}
			if counted {
				dp.Stable, dp.Records, dp.Counted = d.Stable[i], d.Recs[i], d.Counted[i]
			}
			t.Partitions = append(t.Partitions, dp)
			t.Records += dp.Records
			t.Counted = t.Counted && dp.Counted
		}
		dlts = append(dlts, t)
	}
	for _, x := range w.Txns {
		txns = append(txns, kafkamodel.OpenTransaction{Topic: x.Topic, Partition: x.Partition, ProducerID: x.ProducerID, ProducerEpoch: x.Epoch,
			CoordinatorEpoch: x.CoordEpoch, TransactionalID: x.TxnID, State: x.State, StartOffset: x.StartOffset, End: x.End,
			Since: time.UnixMilli(x.Since).UTC(), SinceKnown: x.SinceKnown, LastWrite: time.UnixMilli(x.LastWrite).UTC(),
			Timeout: time.Duration(x.Timeout) * time.Millisecond, Hanging: x.Hanging, After: time.Duration(x.After) * time.Millisecond})
	}
	groups = make([]lag.Group, len(w.Groups))
	type derivedKey struct {
		share     bool
		state     string
		committed bool
		lag       int64
	}
	memo := map[derivedKey]lag.Status{} // idle groups' partitions share few distinct lags
	for i, wg := range w.Groups {
		g := lag.Group{
			Group: kafkamodel.Group{Name: wg.Name, State: wg.State, ProtocolType: wg.ProtocolType, Protocol: wg.Protocol,
				Members: wg.Members, TotalLag: wg.TotalLag, MaxTimeLag: fromMS(wg.MaxTimeLag), Error: wg.Error,
				Topics: make([]kafkamodel.TopicLag, len(wg.Topics))},
			Status:    lag.Status{Code: wg.Status, Reason: wg.Reason, Since: fromUnixMicro(wg.Since)},
			Rate:      wg.Rate,
			CatchUp:   time.Duration(wg.CatchUp),
			RateKnown: wg.RateKnown,
		}
		g.Type, g.Epoch, g.AssignmentEpoch = wg.Type, wg.Epoch, wg.AssignEpoch
		g.DeliveryLimit, g.DeliveryLimitFrom = wg.DeliveryMax, wg.DeliveryFrom
		share := g.Type == kafkamodel.GroupShare
		if len(wg.MemberList) > 0 {
			g.MemberList = make([]kafkamodel.Member, len(wg.MemberList))
			for k, m := range wg.MemberList {
				g.MemberList[k] = kafkamodel.Member{ID: m.ID, InstanceID: m.Instance, ClientID: m.Client, Host: m.Host, Epoch: m.Epoch,
					Assigned: fromWireAssign(m.Assigned), Target: fromWireAssign(m.Target), Classic: m.Classic}
			}
		}
		for topic, r := range wg.TopicRates {
			if g.TopicRates == nil {
				g.TopicRates = make(map[string]lag.TopicRate, len(wg.TopicRates))
			}
			g.TopicRates[topic] = lag.TopicRate{Consumed: r[0], Produced: r[1]}
		}
		var listed map[string]bool
		if len(wg.Parts) > 0 {
			g.Partitions = make(map[string]lag.Status, len(wg.Parts))
			listed = make(map[string]bool, len(wg.Parts))
			for _, p := range wg.Parts {
				key := lag.PartitionKey(p.Topic, p.Partition)
				listed[key] = true
				if p.Code != lag.StatusOK { // an OK entry only masks a derived status
					g.Partitions[key] = lag.Status{Code: p.Code, Reason: p.Reason, Since: fromUnixMicro(p.Since)}
				}
			}
		}
		for j, wt := range wg.Topics {
			n := len(wt.Partition)
			if len(wt.Committed) != n || len(wt.Start) != n || len(wt.End) != n || len(wt.Lags) != n ||
				(wt.Member != nil && len(wt.Member) != n) || (wt.Errors != nil && len(wt.Errors) != n) ||
				(wt.TimeLags != nil && len(wt.TimeLags) != n) || (wt.ShareStart != nil && len(wt.ShareStart) != n) ||
				(wt.AtMost != nil && len(wt.AtMost) != n) {
				return nil, nil, nil, false, fmt.Errorf("decode snapshot: group %q topic %q: arrays of different lengths", wg.Name, wt.Topic)
			}
			t := kafkamodel.TopicLag{Topic: wt.Topic, Lag: wt.Lag, MaxTimeLag: fromMS(wt.MaxTime), Partitions: make([]kafkamodel.PartitionLag, n)}
			for k := range n {
				p := kafkamodel.PartitionLag{Partition: wt.Partition[k], Committed: wt.Committed[k], Start: wt.Start[k],
					End: wt.End[k], Lag: wt.Lags[k]}
				if wt.Member != nil {
					if m := wt.Member[k]; m >= 0 && m < len(wg.MemberNames) {
						p.Member = wg.MemberNames[m]
					}
				}
				if wt.Errors != nil {
					p.Error = wt.Errors[k]
				}
				if wt.TimeLags != nil {
					p.TimeLag = fromMS(wt.TimeLags[k])
				}
				if wt.ShareStart != nil {
					p.ShareStart = wt.ShareStart[k]
				}
				if wt.AtMost != nil {
					p.LagAtMost = wt.AtMost[k]
				}
				t.Partitions[k] = p
				if derivable(g.State) {
					if key := lag.PartitionKey(t.Topic, p.Partition); !listed[key] {
						if g.Partitions == nil {
							g.Partitions = map[string]lag.Status{}
						}
						k := derivedKey{share, g.State, lag.Position(g.Group, p) >= 0, p.Lag}
						st, ok := memo[k]
						if !ok {
							st = derive(share, g.State, p)
							memo[k] = st
						}
						g.Partitions[key] = st
					}
				}
			}
			g.Topics[j] = t
		}
		if len(g.Partitions) == 0 {
			g.Partitions = nil
		}
		groups[i] = g
	}
	return groups, dlts, txns, true, nil
}

// In a group without members (Kafka state Empty or Dead) every partition has a status, EMPTY or
// DEAD, whose reason follows from the state and the partition's lag alone; stored, those would be
// most of a cluster's snapshot (offsets of idle groups linger for days). They are left out and
// derived again on decoding with the same pure lag.Evaluate; only a partition whose status
// differs from the derived one (its lag is unknown now but was known earlier) is written out.
func derivable(state string) bool { return state == "Empty" || state == "Dead" }

func derive(share bool, state string, p kafkamodel.PartitionLag) lag.Status {
	at := time.Unix(1, 0) // any non-zero time: Evaluate decides Empty and Dead before it looks at times
	if share {
		return lag.EvaluateShare(lag.Rules{}, 0, state, 0,
			[]lag.Sample{{At: at, Committed: p.ShareStart, End: p.End, Lag: p.Lag}}, at)
	}
	return lag.Evaluate(lag.Rules{}, 0, state, 0,
		[]lag.Sample{{At: at, Committed: p.Committed, End: p.End, Lag: p.Lag}}, at)
}

// ms is a time lag in the wire's milliseconds (-1 stays unknown).
func ms(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func fromMS(v int64) time.Duration {
	if v < 0 {
		return -1
	}
	return time.Duration(v) * time.Millisecond
}

// splitKey parses a lag.PartitionKey; the topic itself may contain no "/" (Kafka forbids it).
func splitKey(key string) (string, int32, error) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			p, err := strconv.ParseInt(key[i+1:], 10, 32)
			if err != nil {
				break
			}
			return key[:i], int32(p), nil
		}
	}
	return "", 0, fmt.Errorf("encode snapshot: bad partition key %q", key)
}
