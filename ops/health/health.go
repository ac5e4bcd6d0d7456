// Package health is the one model of what is on fire: the problems that the overview shows, the
// exporter counts and notifications are sent about. A Problem has a stable Key (the same thing
// burning at two evaluations has the same key whatever its numbers say now), so that a reader can
// tell a problem that starts from one that goes on. The rules are pure functions of what the
// sampler, the outboxes, the replay ledger and the dependency checks report; Monitor reads those
// sources and applies them.
package health

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
	"github.com/redrive/redrive/ops/lag"
	"github.com/redrive/redrive/ops/outbox"
	"github.com/redrive/redrive/ops/page"
	"github.com/redrive/redrive/ops/queues"
	"github.com/redrive/redrive/ops/replay"
)

// Severities, worst first.
const (
	Critical = "critical"
	Warning  = "warning"
	Info     = "info"
)

// Kinds of problems. Job outcomes (ReplayDone, ReplayCancelled, ReplayFailed) are events worth a
// notification but not a line of the overview: see Problem.Notice.
const (
	KindKafkaGroup          = "kafka_group"
	KindKafkaTransaction    = "kafka_transaction"
	KindDeadLetters         = "dead_letters"
	KindNewErrorGroup       = "new_error_group"
	KindKafkaUnavailable    = "kafka_unavailable"
	KindRabbitUnavailable   = "rabbitmq_unavailable"
	KindQueueGrowing        = "queue_growing"
	KindDeadLettersLost     = "dead_letters_lost"
	KindOutboxUnavailable   = "outbox_unavailable"
	KindOutboxStuck         = "outbox_stuck"
	KindOutboxDead          = "outbox_dead"
	KindOutboxBacklog       = "outbox_backlog"
	KindReplayRunning       = "replay_running"
	KindReplayFailures      = "replay_failures"
	KindReplayUnavailable   = "replay_unavailable"
	KindReplayAwaiting      = "replay_awaiting_approval"
	KindReplayDone          = "replay_done"
	KindReplayCancelled     = "replay_cancelled"
	KindReplayFailed        = "replay_failed"
	KindDependencyDown      = "dependency_down"
	noticeWindow            = 24 * time.Hour
	recentDeadLetterArrival = time.Hour
)

// Kinds are the kinds of problems, and Severities their severities, worst first: what a
// notification rule or a silence may name (a name not here can never match).
var (
	Kinds = []string{KindKafkaGroup, KindDeadLetters, KindNewErrorGroup, KindKafkaUnavailable, KindRabbitUnavailable,
		KindQueueGrowing, KindDeadLettersLost, KindOutboxUnavailable, KindOutboxStuck, KindOutboxDead, KindOutboxBacklog, KindReplayRunning,
		KindReplayFailures, KindReplayUnavailable, KindReplayAwaiting, KindReplayDone, KindReplayCancelled, KindReplayFailed,
		KindDependencyDown, KindKafkaTransaction}
	Severities = []string{Critical, Warning, Info}
)

// Problem is one thing on fire (or worth knowing about).
type Problem struct {
	// Key is stable while the problem lasts: kind and subject ("kafka_group/main/billing"), never
	// a number that changes between samples.
	Key      string
	Kind     string
	Severity string // Critical, Warning, Info
	Title    string // one line, with the numbers as of now
	Summary  string // what it means and what to look at; may be ""
	// Page is the console page that shows it, its subject named by Labels: the edge makes it a
	// link (paths/links.To), so that the rules build no URL.
	Page page.Page
	// Labels name the subject: cluster, group, topic, broker, vhost, queue, outbox, job,
	// dependency — only those that apply.
	Labels map[string]string
	// Since is when the problem started as far as the data says (a job's creation, the newest
	// dead letter, the oldest waiting event, the last move of a stuck group's offsets); zero when
	// the data does not say — a problem seen now may have begun long before, and the evaluation
	// time would claim otherwise.
	Since time.Time
}

// Notice reports whether the problem is an event for notifications only (a replay job's outcome),
// left out of the overview's list of what is on fire.
func (p Problem) Notice() bool {
	switch p.Kind {
	case KindReplayDone, KindReplayCancelled, KindReplayFailed:
		return true
	}
	return false
}

// key is a problem's Key: its kind and subject parts joined by "/". Each part but one is a
// configured name (letters, digits, '.', '_', '-') or a fixed word; one part may hold "/" (a Kafka
// group, the dependency "kafka/main"), and the key stays unambiguous. A subject of two names the
// broker gives (a RabbitMQ vhost and queue) has queueKey.
func key(kind string, subject ...string) string {
	return kind + "/" + strings.Join(subject, "/")
}

// queueKey is the key of a problem about queue in vhost: key(kind, prefix..., vhost, queue) when
// each of the two is the default vhost "/" or holds no "/" — the key such problems always had, so
// that the notifier's record of them (what it sent, the episode, kept by key) carries on — and
// unambiguous then (a part is "/" or runs to the next "/"). A vhost or queue holding "/" otherwise
// would make two subjects one key (vhost "prod" with queue "eu/orders.dlq", vhost "prod/eu" with
// queue "orders.dlq"), and the notifier keeps one problem per key: then each part is escaped ("%"
// as "%25", "/" as "%2F") and the kind is followed by "%" ("dead_letters%/rabbitmq/main/prod/eu%2Forders.dlq"),
// which no unescaped key has (kinds hold no "%").
func queueKey(kind string, prefix []string, vhost, queue string) string {
	plain := func(s string) bool { return s == "/" || !strings.Contains(s, "/") }
	parts := append(append([]string{}, prefix...), vhost, queue)
	if plain(vhost) && plain(queue) {
		return key(kind, parts...)
	}
	for i, p := range parts {
		parts[i] = keyEscaper.Replace(p)
	}
	return kind + "%/" + strings.Join(parts, "/")
}

var keyEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// Sort orders problems worst first, keeping the order of equal severities.
func Sort(ps []Problem) {
	rank := map[string]int{Critical: 0, Warning: 1, Info: 2}
	sort.SliceStable(ps, func(i, j int) bool { return rank[ps[i].Severity] < rank[ps[j].Severity] })
}

// groupNoun names a group of a kind for a problem's summary.
func groupNoun(kind string) string {
	switch kind {
	case "share":
		return "Share group"
	case "consumer":
		return "Consumer group (KIP-848)"
	}
	return "Consumer group"
}

// KafkaProblems are the problems of one cluster from the sampler's latest snapshot (err: the
// snapshot could not be read). A group is a problem when its status is not OK (EMPTY only with
// lag); a dead-letter topic when a record arrived in the last hour.
func KafkaProblems(cluster string, snap lag.Snapshot, err error, now time.Time) []Problem {
	link := page.Of(page.KafkaCluster)
	labels := map[string]string{"cluster": cluster}
	if err != nil {
		return []Problem{{Key: key(KindKafkaUnavailable, cluster), Kind: KindKafkaUnavailable, Severity: Critical,
			Title: fmt.Sprintf("Lag of %s unavailable: %s", cluster, reason(err)), Page: link, Labels: labels,
			Summary: "The sampler's snapshot of this cluster cannot be read from the console's store."}}
	}
	var out []Problem
	if snap.Error != "" {
		out = append(out, Problem{Key: key(KindKafkaUnavailable, cluster), Kind: KindKafkaUnavailable, Severity: Critical,
			Title: fmt.Sprintf("Kafka %s: the last sample failed: %s", cluster, snap.Error), Page: link, Labels: labels,
			Since: snap.ErrorAt, Summary: "Lag and dead-letter numbers are as of the last good sample."})
	}
	for _, g := range snap.Groups {
		code := g.Status.Code
		if code == lag.StatusOK || (code == lag.StatusEmpty && g.TotalLag == 0) {
			continue
		}
		severity := Warning
		if code == lag.StatusStop || code == lag.StatusStall || code == lag.StatusDead || code == lag.StatusErr {
			severity = Critical
		}
		behind := ""
		if g.MaxTimeLag > 0 {
			behind = ", " + ops.FormatAge(g.MaxTimeLag.Truncate(time.Second)) + " behind"
		}
		out = append(out, Problem{Key: key(KindKafkaGroup, cluster, g.Name), Kind: KindKafkaGroup, Severity: severity,
			Title: fmt.Sprintf("%s/%s is %s (total lag %s%s): %s", cluster, g.Name, code,
				ops.FormatNum(g.TotalLag), behind, g.Status.Reason),
			Summary: fmt.Sprintf("%s %s on %s is %s.", groupNoun(g.Kind()), g.Name, cluster, code),
			Page:    page.Of(page.KafkaGroup),
			Labels:  map[string]string{"cluster": cluster, "group": g.Name, "status": string(code)}, Since: g.Status.Since})
	}
	for _, t := range snap.DeadLetterTopics {
		// Open dead letters only: a DLT whose records were all resolved, ignored or replayed is a
		// fixed incident, not one on fire.
		if t.Retry || t.Open() == 0 || now.Sub(t.NewestAt) > recentDeadLetterArrival {
			continue
		}
		held := ops.Plural(t.Records, "dead letter")
		if t.Settled > 0 {
			held = ops.FormatNum(t.Open()) + " open " + ops.PluralWord(t.Open(), "dead letter") + " (of " + ops.FormatNum(t.Records) + ")"
		}
		out = append(out, Problem{Key: key(KindDeadLetters, "kafka", cluster, t.Topic), Kind: KindDeadLetters, Severity: Warning,
			Title: fmt.Sprintf("%s (%s) holds %s; the newest arrived %s ago",
				t.Topic, cluster, held, ops.FormatAge(now.Sub(t.NewestAt).Round(time.Second))),
			Summary: "Dead letters arrived in the last hour.",
			Page:    page.Of(page.ErrorGroups),
			Labels:  map[string]string{"cluster": cluster, "topic": t.Topic}, Since: t.NewestAt})
	}
	for _, t := range snap.Transactions {
		if t.Overdue(now) {
			out = append(out, transactionProblem(cluster, t, snap.Groups, now))
		}
	}
	return out
}

// HeldGroups are the groups of gs that consume the transaction's partition and have consumed up
// to where it began: a read_committed consumer of theirs waits there for as long as it stays open
// (a group behind it reaches it later). Sorted.
func HeldGroups(gs []lag.Group, t kafkamodel.OpenTransaction) []string {
	var out []string
	for _, g := range gs {
		for _, tl := range g.Topics {
			if tl.Topic != t.Topic {
				continue
			}
			for _, p := range tl.Partitions {
				if p.Partition == t.Partition && p.Committed >= t.StartOffset {
					out = append(out, g.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TransactionOwner names who holds a transaction open: its transactional id and producer id, or
// the producer id alone when no coordinator knows it.
func TransactionOwner(t kafkamodel.OpenTransaction) string {
	if t.TransactionalID == "" {
		return fmt.Sprintf("producer %d (no transactional id known)", t.ProducerID)
	}
	return fmt.Sprintf("transactional id %s (producer %d)", t.TransactionalID, t.ProducerID)
}

// transactionProblem is a transaction open on a partition for longer than the cluster's
// hanging_transaction_after: read_committed consumers of the partition get nothing past where it
// began, whatever is written after, and their lag grows. Hanging (no coordinator will end it) is
// critical; open with a coordinator that will abort it at its timeout, a warning.
func transactionProblem(cluster string, t kafkamodel.OpenTransaction, groups []lag.Group, now time.Time) Problem {
	held := HeldGroups(groups, t)
	age := ops.FormatAge(t.Open(now).Truncate(time.Second))
	if !t.SinceKnown {
		age = "at least " + age
	}
	title := fmt.Sprintf("%s partition %d (%s): a transaction of %s has been open %s, holding back %s from offset %d",
		t.Topic, t.Partition, cluster, TransactionOwner(t), age, ops.Plural(t.Held(), "offset"), t.StartOffset)
	if len(held) > 0 {
		title += "; " + strings.Join(held, ", ") + " " + map[bool]string{true: "waits", false: "wait"}[len(held) == 1] + " there"
	}
	severity := Warning
	summary := fmt.Sprintf("Read_committed consumers of %s partition %d get nothing past offset %d until the transaction ends. ", t.Topic, t.Partition, t.StartOffset)
	if t.Hanging {
		severity = Critical
		summary += "No transaction coordinator lists this partition in the producer's transaction (kafka-transactions.sh " +
			"find-hanging calls it hanging): nothing will end it. An admin with the brokers' CLUSTER_ACTION right aborts it " +
			"with: " + t.AbortCommand("<bootstrap>") + ". Redrive does not abort transactions."
	} else {
		summary += "Its coordinator (state " + t.State + ") aborts it when its timeout"
		if t.Timeout > 0 {
			summary += " (" + ops.FormatAge(t.Timeout) + ")"
		}
		summary += " passes, unless the producer ends it first: look at the producer."
	}
	labels := map[string]string{"cluster": cluster, "topic": t.Topic, "partition": strconv.Itoa(int(t.Partition)),
		"producer_id": strconv.FormatInt(t.ProducerID, 10)}
	if t.TransactionalID != "" {
		labels["transactional_id"] = t.TransactionalID
	}
	if len(held) > 0 {
		labels["groups"] = strings.Join(held, ",")
	}
	return Problem{Key: key(KindKafkaTransaction, cluster, t.Topic, strconv.Itoa(int(t.Partition)), strconv.FormatInt(t.ProducerID, 10),
		strconv.FormatInt(t.StartOffset, 10)), Kind: KindKafkaTransaction, Severity: severity, Title: title, Summary: summary,
		Page: page.Page{Kind: page.KafkaCluster, Section: "transactions"}, Labels: labels, Since: t.Since}
}

// RabbitProblems are the problems of one broker from the sampler's latest snapshot: dead-letter
// queues holding messages, dead-letter queues that lost messages Redrive did not move (for
// queues.LostWindow after the last loss), dead-letter queues deleted holding dead letters,
// quorum queues holding dead letters they cannot hand on (at-least-once) and (non-retry) queues
// whose backlog keeps growing. A queue whose counts the broker does not report is no problem for
// them: a dead-letter queue that held dead letters when last counted stays one, saying so.
func RabbitProblems(broker string, snap queues.Snapshot, err error, now time.Time) []Problem {
	link := page.Of(page.RabbitBroker)
	if err != nil {
		return []Problem{{Key: key(KindRabbitUnavailable, broker), Kind: KindRabbitUnavailable, Severity: Critical,
			Title: fmt.Sprintf("Queues of %s unavailable: %s", broker, reason(err)), Page: link,
			Labels: map[string]string{"broker": broker}}}
	}
	var out []Problem
	if snap.Error != "" {
		out = append(out, Problem{Key: key(KindRabbitUnavailable, broker), Kind: KindRabbitUnavailable, Severity: Critical,
			Title: fmt.Sprintf("RabbitMQ %s: the last sample failed: %s", broker, snap.Error), Page: link,
			Labels: map[string]string{"broker": broker}, Since: snap.ErrorAt})
	}
	for _, q := range snap.Queues {
		labels := map[string]string{"broker": broker, "vhost": q.Vhost, "queue": q.Name}
		if q.IsDeadLetterQueue && q.Lost > 0 && now.Sub(q.LostAt) < queues.LostWindow {
			out = append(out, lostProblem(broker, q, labels, now))
		}
		at := page.Of(page.QueueMessages)
		if q.AutoDelete || q.Exclusive { // its messages are not browsed (a read would delete it, or is refused): the queue's page says why
			at = page.Of(page.Queue)
		}
		switch {
		case q.IsDeadLetterQueue && !q.CountsUnreported && q.Ready > 0:
			title := fmt.Sprintf("%s holds %s", q.Name, ops.Plural(q.Ready, "dead letter"))
			if q.Growing {
				title += " and keeps growing (" + q.Growth + ")"
			}
			summary := fmt.Sprintf("Dead-letter queue %s on %s (vhost %s) holds messages.", q.Name, broker, q.Vhost)
			if q.DeadLetterHeld > 0 {
				summary += " " + heldForDeadLettering(q, snap)
			}
			out = append(out, Problem{Key: queueKey(KindDeadLetters, []string{"rabbitmq", broker}, q.Vhost, q.Name), Kind: KindDeadLetters,
				Severity: Warning, Title: title, Summary: summary, Page: at, Labels: labels, Since: q.HeldSince})
		case q.IsDeadLetterQueue && q.CountsUnreported && q.LastCounted.Ready > 0:
			// The same problem as while it was counted (its key), said as of the last counts: the
			// counts missing for a few seconds after a node restarts must not resolve it, nor
			// notify it again when they come back.
			out = append(out, Problem{Key: queueKey(KindDeadLetters, []string{"rabbitmq", broker}, q.Vhost, q.Name), Kind: KindDeadLetters,
				Severity: Warning, Title: fmt.Sprintf("%s held %s when last counted at %s; its counts are %s", q.Name,
					ops.Plural(q.LastCounted.Ready, "dead letter"), clockTime(q.LastCounted.At, now), q.StatsNote()),
				Summary: fmt.Sprintf("Dead-letter queue %s on %s (vhost %s) held messages when RabbitMQ last reported its counts; "+
					"what it holds now is not known.", q.Name, broker, q.Vhost),
				Page: at, Labels: labels, Since: q.HeldSince})
		case q.DeadLetterHeld > 0 && !q.CountsUnreported:
			out = append(out, Problem{Key: queueKey(KindDeadLetters, []string{"rabbitmq", broker}, q.Vhost, q.Name), Kind: KindDeadLetters,
				Severity: Warning, Title: fmt.Sprintf("%s holds %s it has not handed on (dead-letter-strategy at-least-once)", q.Name,
					ops.Plural(q.DeadLetterHeld, "dead letter")),
				Summary: heldForDeadLettering(q, snap), Page: page.Of(page.Queue), Labels: labels})
		case q.Growing && !q.Retry:
			out = append(out, Problem{Key: queueKey(KindQueueGrowing, []string{broker}, q.Vhost, q.Name), Kind: KindQueueGrowing, Severity: Warning,
				Title: fmt.Sprintf("%s (%s) keeps growing: %s", q.Name, broker, q.Growth), Page: page.Of(page.Queue), Labels: labels})
		}
	}
	for _, g := range snap.Gone {
		if g.Lost > 0 && now.Sub(g.LostAt) < queues.LostWindow {
			out = append(out, goneProblem(broker, g, now))
		}
	}
	return out
}

// heldForDeadLettering says what a quorum queue's DeadLetterHeld are: dead letters it keeps
// (at-least-once) until a queue behind its dead-letter exchange confirms them, and why none does
// yet when the topology says.
func heldForDeadLettering(q queues.Queue, snap queues.Snapshot) string {
	s := fmt.Sprintf("Quorum queue %s dead-letters at least once: it keeps %s it dead-lettered until a queue behind its "+
		"dead-letter exchange confirms them, retrying meanwhile; they count toward its max-length, and with overflow "+
		"reject-publish a full queue refuses new messages.", q.Name, ops.Plural(q.DeadLetterHeld, "message"))
	if e, ok := snap.Edge(q.Vhost, q.Name); ok && e.Note != "" {
		s += " Its dead letters' route: " + e.Note + "."
	}
	return s
}

// goneProblem is the loss a dead-letter queue left when it vanished: deleted (by a person, an
// expires setting, its exclusive owner's connection closing, its last consumer leaving an
// auto-delete queue) with the dead letters it held.
func goneProblem(broker string, g queues.GoneQueue, now time.Time) Problem {
	title := fmt.Sprintf("%s was deleted (gone at %s) holding %s that Redrive did not move", g.Name, clockTime(g.DeletedAt, now),
		ops.Plural(g.Held, "dead letter"))
	if g.Held == 0 {
		title = fmt.Sprintf("%s lost %s since %s that Redrive did not move, and was deleted (gone at %s)", g.Name,
			ops.Plural(g.Lost, "dead letter"), clockTime(g.LostSince, now), clockTime(g.DeletedAt, now))
	} else if g.Lost > g.Held {
		title += fmt.Sprintf(", after losing %s since %s", ops.Plural(g.Lost-g.Held, "more"), clockTime(g.LostSince, now))
	}
	return Problem{Key: queueKey(KindDeadLettersLost, []string{"rabbitmq", broker}, g.Vhost, g.Name), Kind: KindDeadLettersLost, Severity: Warning,
		Title: title,
		Summary: fmt.Sprintf("Dead-letter queue %s on %s (vhost %s) is no longer there: deleted by someone, by an expires "+
			"policy or argument, with the connection of its exclusive owner, or with the last consumer of an auto-delete "+
			"queue, and its dead letters with it; Redrive has no copy of them. The problem stays for %s after the loss; "+
			"a silence holds its notifications.", g.Name, broker, g.Vhost, lostWindowText),
		Page: page.Of(page.RabbitBroker), Labels: map[string]string{"broker": broker, "vhost": g.Vhost, "queue": g.Name}, Since: g.LostSince}
}

// lostProblem is a dead-letter queue's loss: messages that left it without a Redrive job moving
// them, which no other problem would tell (the queue's "holds N" simply shrinks, or goes).
func lostProblem(broker string, q queues.Queue, labels map[string]string, now time.Time) Problem {
	return Problem{Key: queueKey(KindDeadLettersLost, []string{"rabbitmq", broker}, q.Vhost, q.Name), Kind: KindDeadLettersLost, Severity: Warning,
		Title: fmt.Sprintf("%s lost %s since %s that Redrive did not move (dropped by the broker at a delivery limit, "+
			"purged, expired or consumed elsewhere)", q.Name, ops.Plural(q.Lost, "dead letter"), clockTime(q.LostSince, now)),
		Summary: fmt.Sprintf("The depth of dead-letter queue %s on %s (vhost %s) fell by more than Redrive's replay and discard "+
			"jobs took out of it; the last such fall was seen at %s. Arrivals in the same interval hide departures, so at "+
			"least this many are gone, and Redrive has no copy of them. The problem stays for %s after the last loss; "+
			"a silence holds its notifications.", q.Name, broker, q.Vhost, clockTime(q.LostAt, now), lostWindowText),
		Page: page.Of(page.Queue), Labels: labels, Since: q.LostSince}
}

// lostWindowText is queues.LostWindow as a problem's summary says it.
var lostWindowText = strconv.Itoa(int(queues.LostWindow.Hours())) + " h"

// clockTime is t as a person reads it in a title: "18:02 UTC" within the last day, else with its
// date.
func clockTime(t, now time.Time) string {
	t = t.UTC()
	if now.Sub(t) < 24*time.Hour {
		return t.Format("15:04 UTC")
	}
	return t.Format("Jan 2 15:04 UTC")
}

// OutboxProblems are the problems of one outbox from its stats (err: they could not be read):
// stuck leases, DEAD events that are still open (settledDead of them are DEAD and marked
// resolved or ignored in the console's store), and a due READY event older than staleAfter.
func OutboxProblems(name string, st outbox.Stats, settledDead int64, err error, staleAfter time.Duration, now time.Time) []Problem {
	link := page.Of(page.Outbox)
	labels := map[string]string{"outbox": name}
	if err != nil {
		return []Problem{{Key: key(KindOutboxUnavailable, name), Kind: KindOutboxUnavailable, Severity: Critical,
			Title: fmt.Sprintf("Outbox %s cannot be read: %s", name, reason(err)), Page: link, Labels: labels}}
	}
	var out []Problem
	if f := st.Format; f != nil && st.Attention > 0 && len(f.Attention) > 0 {
		// A registry format (Spring Modulith, namastack): rows in its attention states (FAILED),
		// which the application, not the console, resubmits.
		// Named by the states that hold rows (FAILED, STRANDED, STALE…), linked to the first of
		// them, and said why they wait and what to do (the registry's note) where there is one.
		var states []string
		for _, s := range f.Attention {
			if st.Counts[s] > 0 {
				states = append(states, string(s))
			}
		}
		if len(states) == 0 { // counted together, not per state: every attention state
			for _, s := range f.Attention {
				states = append(states, string(s))
			}
		}
		summary := f.ReadOnlyWhy
		if r := st.Records; r != nil && r.Note != "" {
			summary = r.Note + " " + summary
		}
		out = append(out, Problem{Key: key(KindOutboxDead, name), Kind: KindOutboxDead, Severity: Warning,
			Title:   fmt.Sprintf("Outbox %s: %s %s row(s) in its %s", name, ops.FormatNum(st.Attention), strings.Join(states, "/"), f.Title),
			Summary: summary,
			Page:    page.Filtered(page.Outbox, "status", states[0]), Labels: labels})
	}
	if n := st.StuckLeases; n > 0 {
		out = append(out, Problem{Key: key(KindOutboxStuck, name), Kind: KindOutboxStuck, Severity: Critical,
			Title:   fmt.Sprintf("Outbox %s: %s PROCESSING event(s) with an expired lease", name, ops.FormatNum(n)),
			Summary: "A relay claimed these events and did not finish within its lease; they can be released from the outbox page.",
			Page:    page.Filtered(page.Outbox, "stuck", "true"), Labels: labels, Since: st.Since(st.OldestStuckAge)})
	}
	if dead := st.Counts[outbox.Dead]; dead-min(settledDead, dead) > 0 {
		// Open DEAD events only: the ones people marked resolved or ignored wait for nobody.
		title := fmt.Sprintf("Outbox %s: %s DEAD event(s) waiting for an operator", name, ops.FormatNum(dead))
		if settledDead > 0 {
			title = fmt.Sprintf("Outbox %s: %s open DEAD event(s) (of %s) waiting for an operator", name, ops.FormatNum(dead-settledDead),
				ops.FormatNum(dead))
		}
		out = append(out, Problem{Key: key(KindOutboxDead, name), Kind: KindOutboxDead, Severity: Warning,
			Title:   title,
			Summary: "Events past their maximum attempts; requeue them once the cause is fixed.",
			Page:    page.Filtered(page.Outbox, "status", string(outbox.Dead)), Labels: labels})
	}
	if age := st.OldestReadyAge; age != nil && *age > staleAfter {
		out = append(out, Problem{Key: key(KindOutboxBacklog, name), Kind: KindOutboxBacklog, Severity: Warning,
			Title: fmt.Sprintf("Outbox %s: the oldest due READY event has waited %s", name, ops.FormatAge(*age)),
			Page:  page.Filtered(page.Outbox, "status", string(outbox.Ready)), Labels: labels, Since: st.Since(age)})
	}
	return out
}

// NewErrorGroupProblems are the error groups of the clusters' dead-letter topics whose episode
// started within the window (eps, read since its start; err: they could not be read): an
// exception type (and cause) that had not been seen for the window, or ever. The key carries the
// episode's start, so a group that comes back after a quiet window fires again.
func NewErrorGroupProblems(clusters []string, eps []history.ErrorGroupEpisode, err error, now time.Time) []Problem {
	if err != nil {
		return nil // the store's own trouble is the replay and dependency panels' to tell
	}
	watched := map[string]bool{}
	for _, c := range clusters {
		watched[c] = true
	}
	var out []Problem
	for _, e := range eps {
		rest, ok := strings.CutPrefix(e.Source, "kafka/")
		i := strings.LastIndex(rest, "/") // topic names hold no "/"
		if !ok || i < 0 || !watched[rest[:i]] {
			continue
		}
		cluster, topic := rest[:i], rest[i+1:]
		what := e.ExceptionType
		if what == "" {
			what = "records without exception headers"
		}
		if e.ExceptionCause != "" {
			what += " (cause " + e.ExceptionCause + ")"
		}
		summary := "A kind of failure not seen in this dead-letter topic before its first record here."
		if e.SampleMessage != "" {
			summary += " The newest says: " + ops.CleanText(e.SampleMessage, 300)
		}
		out = append(out, Problem{Key: key(KindNewErrorGroup, "kafka", cluster, topic, e.Key, strconv.FormatInt(e.EpisodeStart.UnixMilli(), 10)),
			Kind: KindNewErrorGroup, Severity: Warning,
			Title: fmt.Sprintf("New error in %s (%s): %s, %s records, the first %s ago", topic, cluster, what, ops.FormatNum(e.Count),
				ops.FormatAge(now.Sub(e.EpisodeStart).Round(time.Second))),
			Summary: summary,
			Page:    page.Of(page.ErrorGroups),
			Labels:  map[string]string{"cluster": cluster, "topic": topic, "exception_type": e.ExceptionType},
			Since:   e.EpisodeStart})
	}
	return out
}

// ReplayProblems are the problems and outcomes of recent replay jobs (err: they could not be
// read): running and pending jobs, jobs awaiting approval, jobs that left failures, and the
// outcome of each job that finished in the last day (a notice).
func ReplayProblems(jobs []replay.Job, err error, now time.Time) []Problem {
	if err != nil {
		return []Problem{{Key: key(KindReplayUnavailable), Kind: KindReplayUnavailable, Severity: Warning,
			Title: "Replay jobs cannot be read: " + reason(err), Page: page.Of(page.Replays), Labels: map[string]string{}}}
	}
	var out []Problem
	for _, j := range jobs {
		link := page.Of(page.Replay)
		labels := map[string]string{"job": j.ID}
		done := j.Published + j.Skipped + j.Failed
		p := func(kind, severity, title string, since time.Time) {
			out = append(out, Problem{Key: key(kind, j.ID), Kind: kind, Severity: severity, Title: title, Page: link, Labels: labels, Since: since})
		}
		switch {
		case j.Status == replay.JobRunning || j.Status == replay.JobPending:
			p(KindReplayRunning, Info, fmt.Sprintf("Replay %s by %s is %s: %d of %d settled", j.ID, j.Actor, j.Status, done, j.Total), j.CreatedAt)
		case j.Status == replay.JobAwaiting:
			p(KindReplayAwaiting, Warning, fmt.Sprintf("Replay %s by %s awaits approval (%d message(s))", j.ID, j.Actor, j.Total), j.CreatedAt)
		case j.Failed > 0 && now.Sub(j.CreatedAt) < noticeWindow:
			p(KindReplayFailures, Warning, fmt.Sprintf("Replay %s left %d message(s) where they were (failed)", j.ID, j.Failed), j.CreatedAt)
		}
		if j.FinishedAt == nil || now.Sub(*j.FinishedAt) >= noticeWindow {
			continue
		}
		switch j.Status {
		case replay.JobDone:
			p(KindReplayDone, Info, fmt.Sprintf("Replay %s by %s finished: %d published, %d skipped, %d failed",
				j.ID, j.Actor, j.Published, j.Skipped, j.Failed), *j.FinishedAt)
		case replay.JobCancelled:
			p(KindReplayCancelled, Info, fmt.Sprintf("Replay %s by %s was cancelled after %d of %d", j.ID, j.Actor, done, j.Total), *j.FinishedAt)
		case replay.JobFailed:
			p(KindReplayFailed, Warning, fmt.Sprintf("Replay %s by %s failed: %s", j.ID, j.Actor, j.Error), *j.FinishedAt)
		}
	}
	return out
}

// Dependency is one configured dependency's last check.
type Dependency struct {
	Name  string // "store", "kafka/main", "outbox/orders"
	OK    bool
	Error string // why not, when !OK: reason of the check's error, for a person
}

// Messages for an error that carries none for a person (ops.Message would give its fixed sentence
// about a request's ID, which no problem has).
const (
	noAnswerInTime = "it did not answer in time; see the console's log for the cause"
	noAnswer       = "see the console's log for the cause"
)

// fixedMessages are ops.Message's sentences for errors without a message of their own.
var fixedMessages = map[string]bool{ops.Message(errors.New("")): true, ops.Message(ops.ErrUnavailable): true}

// reason is what a problem title, a dependency row and so a notification may say about err, a
// source's or a check's failure: the message its adapter wrote for people (ops.Message: "the
// database of outbox \"orders\" did not answer (stats); try again, or see whether it is up"),
// never the cause it wraps (a driver's text names the database's user, host and port, a missing
// table), which Monitor logs. An error without such a message says only where its cause is, and
// whether the source did not answer in time.
func reason(err error) string {
	if msg := ops.Message(err); !fixedMessages[msg] {
		return msg
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return noAnswerInTime
	}
	return noAnswer
}

// DependencyProblems are the dependencies that did not answer their check.
func DependencyProblems(deps []Dependency) []Problem {
	var out []Problem
	for _, d := range deps {
		if !d.OK {
			out = append(out, Problem{Key: key(KindDependencyDown, d.Name), Kind: KindDependencyDown, Severity: Critical,
				Title: d.Name + " is unreachable: " + d.Error, Page: page.Of(page.Readiness), Labels: map[string]string{"dependency": d.Name}})
		}
	}
	return out
}
