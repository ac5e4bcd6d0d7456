package handlers

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/health"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/payload"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/trace"
	"github.com/redrive/redrive/paths"
	"github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
	kafkapages "github.com/redrive/redrive/views/pages/kafka"
)

func (h *Kafka) clusterMeta(c echo.Context, title, cluster string, crumbs ...layout.Crumb) layout.Meta {
	m := h.meta(c, title, "kafka")
	m.Breadcrumbs = kafkaCrumbs(cluster, crumbs...)
	return m
}

func toGroupRows(snap lag.Snapshot) []kafkapages.GroupRow {
	rows := make([]kafkapages.GroupRow, 0, len(snap.Groups))
	for _, g := range snap.Groups {
		var topics []string
		for _, t := range g.Topics {
			topics = append(topics, t.Topic)
		}
		rows = append(rows, kafkapages.GroupRow{Name: g.Name, Type: g.Kind(), State: g.State, Members: g.Members, TotalLag: g.TotalLag,
			TimeLag: timeLagText(g.MaxTimeLag), TimeLagMS: timeLagMS(g.MaxTimeLag), Status: string(g.Status.Code), Reason: g.Status.Reason, Severity: g.Status.Code.Severity(),
			Topics: strings.Join(topics, ", "), Error: g.Error})
	}
	sort.SliceStable(rows, func(i, j int) bool { // worst first, then by lag
		if rows[i].Severity != rows[j].Severity {
			return rows[i].Severity > rows[j].Severity
		}
		return rows[i].TotalLag > rows[j].TotalLag
	})
	return rows
}

func toDLTRows(topics []kafkamodel.DLTopic) []kafkapages.DLTRow {
	rows := make([]kafkapages.DLTRow, 0, len(topics))
	for _, t := range topics {
		var offsets int64
		for _, p := range t.Partitions {
			offsets += p.Offsets()
		}
		rows = append(rows, kafkapages.DLTRow{Topic: t.Topic, Retry: t.Retry, Partitions: len(t.Partitions),
			Records: t.Records, Counted: t.Counted, Offsets: offsets, Open: t.Open(), NewestAt: t.NewestAt})
	}
	return rows
}

func partitionOptions(parts []kafkamodel.PartitionRange) []kafkapages.PartitionOption {
	out := make([]kafkapages.PartitionOption, len(parts))
	for i, p := range parts {
		out[i] = kafkapages.PartitionOption{Partition: p.Partition, Records: p.Stable - p.Start}
	}
	return out
}

// toRecordView is what one record shows inline, each part cut (handlers/cut.go): the records API
// gives the record whole (its value up to kafkamodel.MaxValueBytes).
func toRecordView(r kafkamodel.Record) kafkapages.RecordView {
	v := kafkapages.RecordView{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Size: r.Size,
		Truncated: r.Truncated, OriginalSize: r.OriginalSize, Aborted: r.Aborted, Unstable: r.Unstable, ReplayJob: trace.ReplayCopyOf(r),
		KeySize: len(r.Key)}
	v.Key, v.KeyEncoding = payload.Render(r.Key)
	v.Value, v.ValueEncoding = payload.Render(r.Value)
	v.KeySchema, v.KeySchemaError = schemaLabel(r.KeySchema)
	v.ValueSchema, v.ValueSchemaError = schemaLabel(r.ValueSchema)
	if d := r.KeySchema; d != nil && d.JSON != nil {
		v.Key, _ = payload.Render(d.JSON)
		v.KeyEncoding = d.Format
	}
	if d := r.ValueSchema; d != nil && d.JSON != nil {
		v.Value, _ = payload.Render(d.JSON)
		v.ValueEncoding, v.Truncated = d.Format, false
	}
	if cut, ok := payload.Cut(v.Value, maxRenderedValue); ok {
		v.Value, v.Truncated = cut, true
	}
	v.Key, v.KeyCut = payload.Cut(v.Key, maxRenderedField)
	for _, hd := range r.Headers {
		text, enc := payload.Render(hd.Value)
		if enc == payload.Binary && len(hd.Value) <= 8 {
			text = fmt.Sprintf("0x%x", hd.Value) // short binary ints read better than a hex dump
		}
		h := kafkapages.HeaderView{Key: payload.Clip(hd.Key, maxRenderedField), Size: len(hd.Value)}
		h.Value, h.Cut = payload.Cut(text, maxRenderedField)
		v.Headers = append(v.Headers, h)
	}
	field := func(s string) string { return payload.Clip(s, maxRenderedField) }
	if d := r.DeadLetter; d != nil {
		dv := kafkapages.DeadLetterView{OriginalTopic: field(d.OriginalTopic), ConsumerGroup: field(d.ConsumerGroup),
			ExceptionType: field(d.ExceptionType), ExceptionCause: field(d.ExceptionCause), MessageID: field(d.MessageID),
			TraceID: field(d.TraceID), Convention: d.Convention, MessageSize: len(d.ExceptionMessage), StacktraceSize: len(d.Stacktrace)}
		dv.ExceptionMessage, dv.MessageCut = payload.Cut(d.ExceptionMessage, maxRenderedField)
		dv.Stacktrace, dv.StacktraceCut = payload.Cut(d.Stacktrace, maxRenderedValue)
		if d.OriginalPartition != nil {
			dv.OriginalPartition = strconv.Itoa(int(*d.OriginalPartition))
		}
		if d.OriginalOffset != nil {
			dv.OriginalOffset = strconv.FormatInt(*d.OriginalOffset, 10)
		}
		if d.RetryCount != nil {
			dv.RetryCount = strconv.Itoa(*d.RetryCount)
		}
		v.DeadLetter = &dv
	}
	v.Line = rowLine(v)
	return v
}

// rowLine is what a record's row shows of it (RecordView.Line): a line of each, cut with "…".
func rowLine(v kafkapages.RecordView) kafkapages.RowLine {
	line := func(s string) string { return payload.Clip(s, maxRowText) }
	l := kafkapages.RowLine{Key: line(v.Key), Value: line(v.Value)}
	if d := v.DeadLetter; d != nil {
		if l.Key == "" {
			l.Key = line(d.MessageID)
		}
		l.Exception, l.Message = line(d.ExceptionType), line(d.ExceptionMessage)
	}
	return l
}

// schemaLabel names a decoded key or value's schema for people ("avro acme.Order · id 12 ·
// orders-value"), or says why it could not be decoded.
func schemaLabel(d *kafkamodel.Decoded) (label, problem string) {
	if d == nil {
		return "", ""
	}
	parts := []string{}
	if d.Format != "" {
		parts = append(parts, strings.TrimSpace(d.Format+" "+d.Type))
	}
	if d.ID != 0 {
		parts = append(parts, "id "+strconv.Itoa(d.ID))
	}
	if d.Subject != "" {
		parts = append(parts, d.Subject)
	}
	if d.Error != "" {
		problem = d.Error + "; shown raw"
	}
	return strings.Join(parts, " · "), problem
}

// toPipelineViews words a group's pipelines for its page.
func toPipelineViews(cluster string, ps []sampler.Pipeline) []kafkapages.PipelineView {
	rate := func(r *float64) string {
		if r == nil {
			return ""
		}
		return fmt.Sprintf("%.1f/s", *r)
	}
	out := make([]kafkapages.PipelineView, 0, len(ps))
	for _, p := range ps {
		v := kafkapages.PipelineView{Topic: p.Base, Verdict: p.Verdict, BackedUp: p.BackedUp}
		for _, s := range p.Stages {
			sv := kafkapages.PipelineStageView{Topic: s.Topic, Href: paths.KafkaTopic(cluster, s.Topic), Stage: s.Stage,
				Inflow: rate(s.InflowPerSecond), Consumption: rate(s.ConsumedPerSecond)}
			if s.Stage != sampler.StageMain {
				sv.Records = components.FormatNum(s.Records)
			}
			if s.Consumed {
				sv.Lag = components.FormatNum(s.Lag)
				if s.MaxTimeLag >= 0 {
					sv.TimeLag = timeLagText(time.Duration(s.MaxTimeLag) * time.Millisecond)
				}
			}
			v.Stages = append(v.Stages, sv)
		}
		out = append(out, v)
	}
	return out
}

// groupTypeView fills what a group page shows by the group's type: its partitions (a share
// group's with their start offsets), its members with epochs and assignments, its epochs and a
// share group's delivery limit.
func groupTypeView(page *kafkapages.GroupPage, g lag.Group) {
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			st := g.PartitionStatus(t.Topic, p.Partition)
			page.Partitions = append(page.Partitions, kafkapages.PartitionRow{Topic: t.Topic, Partition: p.Partition,
				ShareStart: p.ShareStart, Committed: p.Committed, NoRecords: p.NoRecords, End: p.End, Lag: p.Lag, LagAtMost: p.LagAtMost, TimeLag: timeLagText(p.TimeLag),
				TimeLagMS: timeLagMS(p.TimeLag), Status: string(st.Code), Reason: st.Reason, Member: p.Member})
		}
	}
	if g.Kind() != kafkamodel.GroupClassic {
		page.Epoch = fmt.Sprintf("group epoch %d · assignment epoch %d", g.Epoch, g.AssignmentEpoch)
	}
	if g.Kind() == kafkamodel.GroupShare && g.DeliveryLimit > 0 {
		where := "the brokers' group.share.delivery.count.limit"
		if g.DeliveryLimitFrom == "group" {
			where = "the group's share.delivery.count.limit"
		}
		page.DeliveryLimit = ops.Plural(int64(g.DeliveryLimit), "attempt")
		page.DeliveryLimitNote = "per record before the broker archives it (" + where + "); Kafka reports no record's own count"
	}
	for _, m := range g.MemberList {
		row := kafkapages.MemberRow{Member: m.Label(), ID: m.ID, Instance: m.InstanceID, Assigned: assignmentText(m.Assigned),
			Classic: m.Classic}
		if g.Kind() != kafkamodel.GroupClassic {
			row.Epoch = strconv.Itoa(int(m.Epoch))
		}
		if m.Target != nil {
			row.Target = assignmentText(m.Target)
		}
		page.MemberRows = append(page.MemberRows, row)
	}
}

// assignmentText words an assignment: "orders 0–2, 5 · refunds 1"; "none" when empty.
func assignmentText(tps []kafkamodel.TopicPartitions) string {
	if len(tps) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(tps))
	for _, tp := range tps {
		var runs []string
		ps := tp.Partitions
		for i := 0; i < len(ps); {
			j := i
			for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
				j++
			}
			if j-i >= 2 {
				runs = append(runs, fmt.Sprintf("%d–%d", ps[i], ps[j]))
			} else {
				for k := i; k <= j; k++ {
					runs = append(runs, strconv.Itoa(int(ps[k])))
				}
			}
			i = j + 1
		}
		parts = append(parts, tp.Topic+" "+strings.Join(runs, ", "))
	}
	return strings.Join(parts, " · ")
}

// toTransactionRows words the open transactions of a snapshot for the cluster page, with the
// groups waiting at each.
func toTransactionRows(snap lag.Snapshot, now time.Time) []kafkapages.TransactionRow {
	out := make([]kafkapages.TransactionRow, 0, len(snap.Transactions))
	for _, t := range snap.Transactions {
		out = append(out, toTransactionRow(t, health.HeldGroups(snap.Groups, t), now))
	}
	return out
}

func toTransactionRow(t kafkamodel.OpenTransaction, held []string, now time.Time) kafkapages.TransactionRow {
	open := ops.FormatAge(t.Open(now).Truncate(time.Second))
	if !t.SinceKnown {
		open = "at least " + open
	}
	return kafkapages.TransactionRow{Topic: t.Topic, Partition: t.Partition, ProducerID: t.ProducerID, TransactionalID: t.TransactionalID,
		State: t.State, StartOffset: t.StartOffset, Held: t.Held(), Open: open, Overdue: t.Overdue(now), Hanging: t.Hanging,
		Groups: strings.Join(held, ", "), AbortCommand: t.AbortCommand("<bootstrap>")}
}

// heldBy are the open transactions of the snapshot that the group waits at.
func heldBy(snap lag.Snapshot, group string, now time.Time) []kafkapages.TransactionRow {
	var out []kafkapages.TransactionRow
	for _, t := range snap.Transactions {
		held := health.HeldGroups(snap.Groups, t)
		if slices.Contains(held, group) {
			out = append(out, toTransactionRow(t, held, now))
		}
	}
	return out
}
