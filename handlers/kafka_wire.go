package handlers

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/views/components"
)

type partitionLagJSON struct {
	Partition int32 `json:"partition"`
	// Committed is the committed offset (-1 when none); null in a share group, which commits none.
	Committed *int64 `json:"committed"`
	// ShareStartOffset is, in a share group only, the share-partition start offset (every record
	// below it acknowledged or archived; -1 when the group has no state there yet).
	ShareStartOffset *int64 `json:"share_start_offset,omitempty"`
	Start            int64  `json:"start"`
	End              int64  `json:"end"`
	// Lag is end − committed; in a share group the broker's lag: records at or above the start
	// offset not yet acknowledged or archived. -1 when unknown.
	Lag int64 `json:"lag"`
	// LagAtMost says Lag is an upper bound: a share group on a broker that reports no share lag
	// (before Kafka 4.2, KIP-1226), whose lag is then end − share start offset.
	LagAtMost bool `json:"lag_at_most,omitempty"`
	// LagSeconds is the time lag: now minus the timestamp of the next record to consume when
	// sampled (in a share group, of the oldest record not yet acknowledged); 0 when caught up,
	// null when unknown.
	LagSeconds *float64 `json:"lag_seconds"`
	Status     string   `json:"status"`
	Reason     string   `json:"reason,omitempty"`
	Member     string   `json:"member,omitempty"`
}

type topicLagJSON struct {
	Topic         string             `json:"topic"`
	Lag           int64              `json:"lag"`
	MaxLagSeconds *float64           `json:"max_lag_seconds"`
	Partitions    []partitionLagJSON `json:"partitions"`
}

type groupJSON struct {
	Group string `json:"group"`
	// Type is classic, consumer (KIP-848) or share (KIP-932).
	Type          string   `json:"type"`
	State         string   `json:"state"`
	Protocol      string   `json:"protocol"`
	Members       int      `json:"members"`
	TotalLag      int64    `json:"total_lag"`
	MaxLagSeconds *float64 `json:"max_lag_seconds"`
	Status        string   `json:"status"`
	Reason        string   `json:"reason"`
	// StatusSince is when the status's finding began as far as the samples show (lag.Status.Since);
	// null when they do not say.
	StatusSince    *time.Time `json:"status_since"`
	RatePerSecond  *float64   `json:"rate_per_second"`
	CatchUpSeconds *float64   `json:"catch_up_seconds"`
	Error          string     `json:"error,omitempty"`
	// GroupEpoch and AssignmentEpoch are a consumer or share group's epochs; null for classic.
	GroupEpoch      *int32 `json:"group_epoch"`
	AssignmentEpoch *int32 `json:"assignment_epoch"`
	// DeliveryCountLimit is, for a share group, how many deliveries a record gets before the
	// broker archives it, and DeliveryCountLimitFrom where that is set (group, broker); absent
	// for other groups and when the configuration could not be read.
	DeliveryCountLimit     *int           `json:"delivery_count_limit,omitempty"`
	DeliveryCountLimitFrom string         `json:"delivery_count_limit_from,omitempty"`
	Topics                 []topicLagJSON `json:"topics"`
}

// groupDetailJSON is one group as GET /api/v1/kafka/{cluster}/groups/{group} answers it: the
// list's fields and the group's pipelines (main topic, retry topics, DLTs).
type groupDetailJSON struct {
	groupJSON
	MemberList []memberJSON   `json:"member_list"`
	Pipelines  []pipelineJSON `json:"pipelines"`
	// SampledAt is the sample the status, rate and members are from; OffsetsAt when the
	// committed and end offsets (and so the lags) were read, a moment ago — null when they are
	// the sample's.
	SampledAt *time.Time `json:"sampled_at"`
	OffsetsAt *time.Time `json:"offsets_at"`
	freshnessJSON
}

// memberJSON is one member of a group with what it owns.
type memberJSON struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	// MemberEpoch is a consumer or share group member's epoch; null in a classic group.
	MemberEpoch *int32                `json:"member_epoch"`
	Assigned    []topicPartitionsJSON `json:"assigned"`
	// Target is, for a KIP-848 member still reconciling, the assignment it is moving to.
	Target          []topicPartitionsJSON `json:"target,omitempty"`
	ClassicProtocol bool                  `json:"classic_protocol,omitempty"`
}

type topicPartitionsJSON struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

func toTopicPartitionsJSON(tps []kafkamodel.TopicPartitions) []topicPartitionsJSON {
	out := make([]topicPartitionsJSON, 0, len(tps))
	for _, tp := range tps {
		out = append(out, topicPartitionsJSON{Topic: tp.Topic, Partitions: tp.Partitions})
	}
	return out
}

// toMembersJSON lists a group's members; an empty list, never null.
func toMembersJSON(g lag.Group) []memberJSON {
	out := make([]memberJSON, 0, len(g.MemberList))
	for _, m := range g.MemberList {
		j := memberJSON{MemberID: m.ID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.Host,
			Assigned: toTopicPartitionsJSON(m.Assigned), ClassicProtocol: m.Classic}
		if g.Kind() != kafkamodel.GroupClassic {
			j.MemberEpoch = new(m.Epoch)
		}
		if m.Target != nil {
			j.Target = toTopicPartitionsJSON(m.Target)
		}
		out = append(out, j)
	}
	return out
}

type pipelineJSON struct {
	Topic    string              `json:"topic"` // the main topic
	Verdict  string              `json:"verdict"`
	BackedUp bool                `json:"backed_up"`
	Stages   []pipelineStageJSON `json:"stages"`
}

type pipelineStageJSON struct {
	Topic             string   `json:"topic"`
	Stage             string   `json:"stage"` // main, retry, dlt
	Consumed          bool     `json:"consumed"`
	Lag               *int64   `json:"lag"` // null when the group does not read the topic
	LagSeconds        *float64 `json:"lag_seconds"`
	Records           int64    `json:"records"`
	InflowPerSecond   *float64 `json:"inflow_per_second"`
	ConsumedPerSecond *float64 `json:"consumed_per_second"`
}

func toPipelinesJSON(ps []sampler.Pipeline) []pipelineJSON {
	out := make([]pipelineJSON, 0, len(ps))
	for _, p := range ps {
		j := pipelineJSON{Topic: p.Base, Verdict: p.Verdict, BackedUp: p.BackedUp, Stages: make([]pipelineStageJSON, 0, len(p.Stages))}
		for _, s := range p.Stages {
			sj := pipelineStageJSON{Topic: s.Topic, Stage: s.Stage, Consumed: s.Consumed, Records: s.Records,
				InflowPerSecond: s.InflowPerSecond, ConsumedPerSecond: s.ConsumedPerSecond}
			if s.Consumed {
				lag := s.Lag
				sj.Lag = &lag
				if s.MaxTimeLag >= 0 {
					secs := float64(s.MaxTimeLag) / 1000
					sj.LagSeconds = &secs
				}
			}
			j.Stages = append(j.Stages, sj)
		}
		out = append(out, j)
	}
	return out
}

func toGroupJSON(g lag.Group) groupJSON {
	j := groupJSON{Group: g.Name, Type: g.Kind(), State: g.State, Protocol: g.Protocol, Members: g.Members, TotalLag: g.TotalLag,
		MaxLagSeconds: seconds(g.MaxTimeLag), Status: string(g.Status.Code), Reason: g.Status.Reason, StatusSince: knownUTC(g.Status.Since), Error: g.Error, Topics: []topicLagJSON{}}
	share := g.Kind() == kafkamodel.GroupShare
	if g.Kind() != kafkamodel.GroupClassic {
		j.GroupEpoch, j.AssignmentEpoch = new(g.Epoch), new(g.AssignmentEpoch)
	}
	if share && g.DeliveryLimit > 0 {
		j.DeliveryCountLimit, j.DeliveryCountLimitFrom = new(g.DeliveryLimit), g.DeliveryLimitFrom
	}
	if g.RateKnown {
		rate := g.Rate
		j.RatePerSecond = &rate
		if g.CatchUp >= 0 {
			s := g.CatchUp.Seconds()
			j.CatchUpSeconds = &s
		}
	}
	j.Topics = make([]topicLagJSON, 0, len(g.Topics))
	for _, t := range g.Topics {
		n := len(t.Partitions)
		tj := topicLagJSON{Topic: t.Topic, Lag: t.Lag, MaxLagSeconds: seconds(t.MaxTimeLag), Partitions: make([]partitionLagJSON, n)}
		// The partitions' optional numbers point into one array per topic: the all-groups answer
		// has 10,000 partitions at 200 × 50, and two small allocations each were a third of its
		// encoding's garbage.
		offsets, lagSeconds := make([]int64, n), make([]float64, n)
		for i, p := range t.Partitions {
			st := g.PartitionStatus(t.Topic, p.Partition)
			pj := partitionLagJSON{Partition: p.Partition, Start: p.Start, End: p.End, Lag: p.Lag, LagAtMost: p.LagAtMost,
				Status: string(st.Code), Reason: st.Reason, Member: p.Member}
			if v, known := secondsOf(p.TimeLag); known {
				lagSeconds[i] = v
				pj.LagSeconds = &lagSeconds[i]
			}
			if share {
				offsets[i] = p.ShareStart
				pj.ShareStartOffset = &offsets[i]
			} else {
				offsets[i] = p.Committed
				pj.Committed = &offsets[i]
			}
			tj.Partitions[i] = pj
		}
		j.Topics = append(j.Topics, tj)
	}
	return j
}

// timeLagText is a time lag for pages: "0 s" when caught up, "" (a dash) when unknown.
func timeLagText(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return components.FormatAge(d.Truncate(time.Second))
}

func timeLagMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// seconds is a time lag for the API: seconds with millisecond precision, nil (null) when unknown.
func seconds(d time.Duration) *float64 {
	s, known := secondsOf(d)
	if !known {
		return nil
	}
	return &s
}

// secondsOf is seconds' value, without the allocation: false when unknown.
func secondsOf(d time.Duration) (float64, bool) {
	if d < 0 {
		return 0, false
	}
	return float64(d.Milliseconds()) / 1000, true
}

// groupHistoryJSON is a group's history, oldest point first.
type groupHistoryJSON struct {
	Points []groupPointJSON `json:"points"`
}

// groupPointJSON is one point of a group's history: its fixed fields and, beside them, one field
// per partition ("<topic>/<partition>": lag), the OpenAPI document's additionalProperties. A
// partition's key holds a "/", so it never meets a fixed field's name.
type groupPointJSON struct {
	At            time.Time        `json:"at"`
	TotalLag      int64            `json:"total_lag"`
	MaxLagSeconds *float64         `json:"max_lag_seconds"`
	Partitions    map[string]int64 `json:"-"`
}

func (p groupPointJSON) MarshalJSON() ([]byte, error) {
	type fixed groupPointJSON // the same fields without this method
	b, err := json.Marshal(fixed(p))
	if err != nil || len(p.Partitions) == 0 {
		return b, err
	}
	parts, err := json.Marshal(p.Partitions)
	if err != nil {
		return nil, err
	}
	// {"at":…,"max_lag_seconds":null} and {"orders/0":12} make one object.
	return append(append(b[:len(b)-1], ','), parts[1:]...), nil
}

type dltJSON struct {
	Topic      string `json:"topic"`
	Retry      bool   `json:"retry"`
	Partitions int    `json:"partitions"`
	// Records are data records a read_committed consumer gets, counted (no transaction marker,
	// no aborted record); an upper bound while Counted is false.
	Records  int64              `json:"records"`
	Counted  bool               `json:"records_counted"`
	Open     int64              `json:"open"` // records not resolved, ignored or replayed
	NewestAt *time.Time         `json:"newest_at"`
	PerPart  []dltPartitionJSON `json:"partition_records"`
}

// dltPartitionJSON is one partition's offsets: start, end (the high watermark), the last stable
// offset, and its records. Records are counted where the answer says records_counted; elsewhere
// (a page's partitions) they are the offsets a committed read spans, last_stable_offset − start.
type dltPartitionJSON struct {
	Partition        int32 `json:"partition"`
	Start            int64 `json:"start"`
	End              int64 `json:"end"`
	LastStableOffset int64 `json:"last_stable_offset"`
	Records          int64 `json:"records"`
	Counted          *bool `json:"records_counted,omitempty"`
}

// toDLTPartitionJSON is a dead-letter topic's partition with its counted records.
func toDLTPartitionJSON(p kafkamodel.DLPartition) dltPartitionJSON {
	return dltPartitionJSON{Partition: p.Partition, Start: p.Start, End: p.End, LastStableOffset: p.Stable, Records: p.Records,
		Counted: &p.Counted}
}

// toPartitionJSON is a page's partition: its records are the offsets a committed read spans.
func toPartitionJSON(p kafkamodel.PartitionRange) dltPartitionJSON {
	return dltPartitionJSON{Partition: p.Partition, Start: p.Start, End: p.End, LastStableOffset: p.Stable, Records: p.Stable - p.Start}
}

// deadLetterTopicsJSON is a cluster's dead-letter and retry topics.
type deadLetterTopicsJSON struct {
	Topics []dltJSON `json:"topics"`
}

type headerJSON struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Encoding string `json:"value_encoding,omitempty"` // "base64" when the value is not UTF-8 text
}

type deadLetterJSON struct {
	OriginalTopic     string     `json:"original_topic"`
	OriginalPartition *int32     `json:"original_partition"`
	OriginalOffset    *int64     `json:"original_offset"`
	OriginalTimestamp *time.Time `json:"original_timestamp"`
	ConsumerGroup     string     `json:"consumer_group"`
	ExceptionType     string     `json:"exception_type"`
	ExceptionCause    string     `json:"exception_cause"`
	ExceptionMessage  string     `json:"exception_message"`
	Stacktrace        string     `json:"stacktrace,omitempty"`
	RetryCount        *int       `json:"retry_count"`
	MessageID         string     `json:"message_id"`
	TraceID           string     `json:"trace_id,omitempty"`
	FirstFailedAt     string     `json:"first_failed_at,omitempty"`
	Convention        string     `json:"convention"`
}

type recordJSON struct {
	Partition      int32           `json:"partition"`
	Offset         int64           `json:"offset"`
	Timestamp      time.Time       `json:"timestamp"`
	Key            *string         `json:"key"`
	KeyEncoding    string          `json:"key_encoding"`
	Value          *string         `json:"value"`
	ValueEncoding  string          `json:"value_encoding"`
	ValueTruncated bool            `json:"value_truncated"`
	Redacted       bool            `json:"redacted,omitempty"`
	Size           int             `json:"size"`
	Headers        []headerJSON    `json:"headers"`
	DeadLetter     *deadLetterJSON `json:"dead_letter"`
	Resolution     *resolutionJSON `json:"resolution"`
	KeySchema      *schemaJSON     `json:"key_schema"`
	ValueSchema    *schemaJSON     `json:"value_schema"`
	// Aborted and Unstable come only with isolation=uncommitted (kafkamodel.Record's): a record of an
	// aborted transaction, and one at or past the last stable offset.
	Aborted  bool `json:"aborted,omitempty"`
	Unstable bool `json:"unstable,omitempty"`
}

// schemaJSON names the schema a key or value was decoded with; Error says why it could not be
// (the bytes are then given as they are).
type schemaJSON struct {
	Format  string `json:"format"`
	ID      int    `json:"id"`
	Subject string `json:"subject"`
	Type    string `json:"type"`
	Error   string `json:"error,omitempty"`
}

func toSchemaJSON(d *kafkamodel.Decoded) *schemaJSON {
	if d == nil {
		return nil
	}
	return &schemaJSON{Format: d.Format, ID: d.ID, Subject: d.Subject, Type: d.Type, Error: d.Error}
}

// decodedJSON is a decoded key or value as the API gives it: its JSON text, encoding "json".
func decodedJSON(d *kafkamodel.Decoded) (*string, string, bool) {
	if d == nil || d.JSON == nil {
		return nil, "", false
	}
	s := string(d.JSON)
	return &s, payload.JSON, true
}

// bytesJSON is a key or value as the API gives it (payload.Encode), in the Kafka record's terms:
// an absent key or value (a null in the record) is "null", and a present one of no bytes is the
// text "" (the Kafka API's encodings have no "empty").
func bytesJSON(b []byte) (*string, string) {
	if b == nil {
		return nil, "null"
	}
	s, enc := payload.Encode(b)
	if enc == payload.Empty {
		enc = payload.Text
	}
	return &s, enc
}

// toRecordJSON gives decoded keys and values as their JSON, unless raw asks for the original
// bytes (base64 when they are not UTF-8, as for any value).
func toRecordJSON(r kafkamodel.Record, raw bool) recordJSON {
	j := recordJSON{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC(), ValueTruncated: r.Truncated,
		Size: r.Size, Headers: []headerJSON{}, KeySchema: toSchemaJSON(r.KeySchema), ValueSchema: toSchemaJSON(r.ValueSchema),
		Aborted: r.Aborted, Unstable: r.Unstable}
	j.Key, j.KeyEncoding = bytesJSON(r.Key)
	j.Value, j.ValueEncoding = bytesJSON(r.Value)
	if raw {
		if r.Key != nil && r.KeySchema != nil {
			k := base64.StdEncoding.EncodeToString(r.Key)
			j.Key, j.KeyEncoding = &k, payload.Base64
		}
		if r.Value != nil && r.ValueSchema != nil {
			v := base64.StdEncoding.EncodeToString(r.Value)
			j.Value, j.ValueEncoding = &v, payload.Base64
		}
	} else {
		if k, enc, ok := decodedJSON(r.KeySchema); ok {
			j.Key, j.KeyEncoding = k, enc
		}
		if v, enc, ok := decodedJSON(r.ValueSchema); ok {
			j.Value, j.ValueEncoding, j.ValueTruncated = v, enc, false
		}
	}
	for _, hd := range r.Headers {
		h := headerJSON{Key: hd.Key}
		var enc string
		if h.Value, enc = payload.Encode(hd.Value); enc == payload.Base64 {
			h.Encoding = enc // a header says only when it is not text
		}
		j.Headers = append(j.Headers, h)
	}
	if d := r.DeadLetter; d != nil {
		j.DeadLetter = &deadLetterJSON{OriginalTopic: d.OriginalTopic, OriginalPartition: d.OriginalPartition,
			OriginalOffset: d.OriginalOffset, OriginalTimestamp: d.OriginalTimestamp, ConsumerGroup: d.ConsumerGroup,
			ExceptionType: d.ExceptionType, ExceptionCause: d.ExceptionCause, ExceptionMessage: d.ExceptionMessage,
			Stacktrace: d.Stacktrace, RetryCount: d.RetryCount, MessageID: d.MessageID, TraceID: d.TraceID,
			FirstFailedAt: d.FirstFailedAt, Convention: d.Convention}
	}
	return j
}

// recordsJSON is a page of one partition's records.
type recordsJSON struct {
	Records []recordJSON `json:"records"`
	Start   int64        `json:"start"`
	End     int64        `json:"end"`
	// LastStableOffset is where a committed page (the default) ends: a transaction still open
	// began there; End when none is.
	LastStableOffset int64  `json:"last_stable_offset"`
	Isolation        string `json:"isolation"` // "committed" or (admins) "uncommitted"
	NextOffset       *int64 `json:"next_offset"`
	PrevOffset       *int64 `json:"prev_offset"`
}

// recordsAcrossJSON is a page across every partition (partition=all).
type recordsAcrossJSON struct {
	Records    []recordJSON       `json:"records"`
	Partition  string             `json:"partition"` // "all"
	Order      string             `json:"order"`
	Isolation  string             `json:"isolation"`
	Partitions []dltPartitionJSON `json:"partitions"`
	NextCursor *string            `json:"next_cursor"`
}

// kafkaErrorGroupsJSON is a topic's dead letters grouped by exception, from its newest records.
type kafkaErrorGroupsJSON struct {
	Groups []kafkaErrorGroupJSON `json:"groups"`
	// Scanned and Total are data records (what a read_committed consumer gets); Total is an upper
	// bound unless TotalExact.
	Scanned    int64 `json:"scanned"`
	Total      int64 `json:"total"`
	TotalExact bool  `json:"total_exact"`
	Capped     bool  `json:"capped"`
}

type kafkaErrorGroupJSON struct {
	ExceptionType   string     `json:"exception_type"`
	ExceptionCause  string     `json:"exception_cause"`
	Count           int64      `json:"count"`
	Open            int64      `json:"open"` // of count, those not resolved, ignored or replayed
	FirstAt         time.Time  `json:"first_at"`
	LastAt          time.Time  `json:"last_at"`
	OriginalTopics  []string   `json:"original_topics"`
	SampleMessage   string     `json:"sample_message"`
	SamplePartition int32      `json:"sample_partition"`
	SampleOffset    int64      `json:"sample_offset"`
	Notes           []noteJSON `json:"notes"` // people's notes on the group, oldest first
}
