package trace

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/inbox"
	"github.com/redrive/redrive/ops/replay"
)

// verdict is the line on top of a trace, in the seed's words: "in the outbox as SENT, published
// to orders/2 at offset 811, dead-lettered by inventory-service (DeserializationException), not
// processed by inventory-service, processed by billing-service". It names what was not searched
// and what could not be, so that "not found" is never silent.
func verdict(q Query, steps []Step, consumers []ops.Consumer) string {
	var parts []string
	add := func(s string) {
		if s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	by := func(kind string, found bool, roles ...string) []Step {
		var out []Step
		for _, s := range steps {
			if s.Kind == kind && s.Found == found && (len(roles) == 0 || slices.Contains(roles, s.fact.role)) {
				out = append(out, s)
			}
		}
		return out
	}

	// Outbox.
	rows := by(KindOutbox, true)
	switch {
	case len(rows) == 1:
		s := "in the outbox as " + rows[0].fact.status
		if rows[0].fact.stuck {
			s += " with an expired lease (stuck)"
		}
		add(s)
	case len(rows) > 1:
		counts := map[string]int{}
		var order []string
		for _, r := range rows {
			if counts[r.fact.status] == 0 {
				order = append(order, r.fact.status)
			}
			counts[r.fact.status]++
		}
		var c []string
		for _, st := range order {
			c = append(c, fmt.Sprintf("%d %s", counts[st], st))
		}
		add(fmt.Sprintf("%d events in the outbox (%s)", len(rows), strings.Join(c, ", ")))
	default:
		for _, s := range by(KindOutbox, false) {
			if !s.Down && strings.HasPrefix(s.Detail, "no row") {
				add("not in the outbox")
			}
		}
	}

	// Kafka: published, retried, dead-lettered.
	published := by(KindKafka, true, "original")
	switch {
	case len(published) > 0 && len(published) <= 5:
		// One phrase per partition: "orders/2 at offset 811", "orders/2 at offsets 811, 812".
		var order []string
		offsets := map[string][]string{}
		for _, s := range published {
			tp := fmt.Sprintf("%s/%d", s.fact.topic, s.fact.partition)
			if offsets[tp] == nil {
				order = append(order, tp)
			}
			offsets[tp] = append(offsets[tp], fmt.Sprint(s.fact.offset))
		}
		var ps []string
		for _, tp := range order {
			if len(offsets[tp]) == 1 {
				ps = append(ps, tp+" at offset "+offsets[tp][0])
			} else {
				ps = append(ps, tp+" at offsets "+strings.Join(offsets[tp], ", "))
			}
		}
		add("published to " + strings.Join(ps, " and "))
	case len(published) > 5:
		topics := map[string]bool{}
		for _, s := range published {
			topics[fmt.Sprintf("%s/%d", s.fact.topic, s.fact.partition)] = true
		}
		add(fmt.Sprintf("%d records published to %s", len(published), strings.Join(slices.Sorted(maps.Keys(topics)), ", ")))
	default:
		var missing []string
		for _, s := range by(KindKafka, false, "original") {
			if s.Down || s.fact.partial != "" || s.Detail == "the topic does not exist" {
				continue
			}
			missing = append(missing, s.fact.topic)
		}
		if len(missing) > 0 {
			add("not found in " + strings.Join(missing, ", "))
		}
	}
	for _, s := range by(KindKafka, true, "retry") {
		add("retried via " + s.fact.topic)
	}
	for _, s := range by(KindKafka, true, "dead_letter") {
		switch {
		case s.fact.by != "" && s.fact.exception != "":
			add(fmt.Sprintf("dead-lettered by %s (%s)", s.fact.by, s.fact.exception))
		case s.fact.by != "":
			add("dead-lettered by " + s.fact.by)
		case s.fact.exception != "":
			add(fmt.Sprintf("dead-lettered to %s (%s)", s.fact.topic, s.fact.exception))
		default:
			add("dead-lettered to " + s.fact.topic)
		}
	}
	for _, s := range by(KindKafka, true, RoleReplayCopy) {
		add(fmt.Sprintf("replayed by Redrive to %s/%d at offset %d", s.fact.topic, s.fact.partition, s.fact.offset))
	}

	// RabbitMQ.
	for _, s := range by(KindRabbitMQ, true) {
		queue := s.Ref.Queue
		switch {
		case s.fact.role == "retry":
			add("waiting in the retry queue " + queue)
		case s.fact.by != "" && s.fact.exception != "":
			add(fmt.Sprintf("dead-lettered by %s into %s (%s)", s.fact.by, queue, s.fact.exception))
		default:
			add("dead-lettered into " + queue)
		}
	}

	// Inboxes: per consumer, over the messages looked up.
	type tally struct{ processed, received, none int }
	tallies := map[string]*tally{}
	var names []string
	for _, s := range steps {
		if s.Kind != KindInbox || s.Down || s.fact.status == "" {
			continue
		}
		c := strings.TrimPrefix(s.Source, "inbox ")
		t := tallies[c]
		if t == nil {
			t = &tally{}
			tallies[c] = t
			names = append(names, c)
		}
		switch inbox.Verdict(s.fact.status) {
		case inbox.Processed:
			t.processed++
		case inbox.InProgress:
			t.received++
		default:
			t.none++
		}
	}
	// Not processed first: what the engineer is after.
	sort.SliceStable(names, func(i, j int) bool { return tallies[names[i]].processed < tallies[names[j]].processed })
	for _, c := range names {
		t := tallies[c]
		n := t.processed + t.received + t.none
		switch {
		case t.processed == n:
			add("processed by " + c)
		case t.received == n:
			add("received but not processed by " + c)
		case t.none == n:
			add("not processed by " + c)
		default:
			add(fmt.Sprintf("processed by %s for %d of %d messages", c, t.processed, n))
		}
	}

	// Replays.
	for _, p := range replayPhrases(by(KindReplay, true)) {
		add(p)
	}

	// What could not be searched, and what was searched only in part.
	var downs, partial []string
	for _, s := range steps {
		switch {
		case s.Down:
			downs = append(downs, s.Source)
		case !s.Found && s.fact.partial != "":
			partial = append(partial, s.fact.partial)
		}
	}
	found := false
	for _, s := range steps {
		found = found || (s.Found && s.Kind != KindAudit)
	}
	var out string
	switch {
	case len(steps) == 0:
		out = q.Subject() + " was found nowhere: no outbox, broker, inbox or store is configured to search"
	case !found && len(downs) == 0 && len(partial) == 0:
		out = fmt.Sprintf("%s was found nowhere: every source was searched (%s)", q.Subject(), searchedList(steps))
	case !found:
		out = fmt.Sprintf("%s was not found in what was searched", q.Subject())
	default:
		out = strings.Join(parts, ", ")
	}
	if !found && len(parts) > 0 {
		out += "; " + strings.Join(parts, ", ")
	}
	if len(partial) > 0 {
		out += "; searched in part — " + strings.Join(dedupe(partial), "; ")
	}
	if len(downs) > 0 {
		out += "; could not be searched (down): " + strings.Join(dedupe(downs), ", ")
	}
	return out
}

// searchedList names the places a trace searched, by kind: "1 outbox, 4 Kafka topics, …".
func searchedList(steps []Step) string {
	count := map[string]map[string]bool{}
	for _, s := range steps {
		if count[s.Kind] == nil {
			count[s.Kind] = map[string]bool{}
		}
		count[s.Kind][s.Source] = true
	}
	var out []string
	for _, k := range []struct{ kind, one, many string }{
		{KindOutbox, "outbox", "outboxes"}, {KindKafka, "Kafka topic", "Kafka topics"},
		{KindRabbitMQ, "RabbitMQ queue", "RabbitMQ queues"}, {KindInbox, "inbox", "inboxes"},
		{KindReplay, "the replay ledger", "the replay ledger"}, {KindAudit, "the audit log", "the audit log"},
	} {
		n := len(count[k.kind])
		switch {
		case n == 0:
		case k.kind == KindReplay || k.kind == KindAudit:
			out = append(out, k.one)
		case n == 1:
			out = append(out, "1 "+k.one)
		default:
			out = append(out, fmt.Sprintf("%d %s", n, k.many))
		}
	}
	return strings.Join(out, ", ")
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// replayPhrases say what the jobs in the ledger did with the message. Only a publish is a replay:
// a job that skipped it says why ("job X skipped it: already processed by the consumer"), and
// many jobs skipping it for one reason are one phrase, not one each (a message re-planned by 19
// jobs read "replayed by job …" 19 times).
func replayPhrases(steps []Step) []string {
	var out, reasons []string
	skippers := map[string][]string{}
	for _, s := range steps {
		job := "job " + s.Ref.JobID
		switch s.fact.status {
		case replay.LedgerPublished:
			out = append(out, fmt.Sprintf("replayed by %s (published)", job))
		case replay.LedgerActive:
			out = append(out, "being replayed by "+job)
		case replay.LedgerFailed:
			out = append(out, job+" failed to replay it")
		case replay.LedgerSkipped:
			why := skipWhy(s.fact.note)
			if skippers[why] == nil {
				reasons = append(reasons, why)
			}
			if !slices.Contains(skippers[why], job) {
				skippers[why] = append(skippers[why], job)
			}
		default:
			out = append(out, fmt.Sprintf("%s: %s", job, s.fact.status))
		}
	}
	for _, why := range reasons {
		jobs := skippers[why]
		if len(jobs) == 1 {
			out = append(out, fmt.Sprintf("%s skipped it: %s", jobs[0], why))
			continue
		}
		named := strings.Join(jobs[:min(len(jobs), 3)], ", ")
		if len(jobs) > 3 {
			named += fmt.Sprintf(" and %d more", len(jobs)-3)
		}
		out = append(out, fmt.Sprintf("%d jobs skipped it: %s (%s)", len(jobs), why, named))
	}
	return out
}

// skipWhy is a skipped ledger row's reason in words, from its detail, which starts with the
// plan's action (ops/replay's skip_… and drop_replayed_copy).
func skipWhy(detail string) string {
	action, rest, _ := strings.Cut(detail, " ")
	switch replay.Action(action) {
	case replay.SkipProcessed:
		return "already processed by the consumer"
	case replay.SkipInProgress:
		return "the consumer had received it but not processed it"
	case replay.SkipAlreadyReplayed:
		// "skip_already_replayed (job job_1 replayed it)"
		if by, ok := strings.CutSuffix(strings.Trim(rest, "()"), " replayed it"); ok && by != "" {
			return "already replayed by " + by
		}
		return "already replayed"
	case replay.SkipReplayLimit:
		return "replayed as many times as replay.max_replays_per_message allows"
	case replay.SkipUnresolvable:
		return "its original destination could not be resolved"
	case replay.SkipNoMessageID:
		return "it has no message id for the inbox check"
	case replay.DropReplayedCopy:
		return "an earlier job had moved it, so this copy was removed, not sent again"
	}
	if detail == "" {
		return "no reason recorded"
	}
	return detail
}
