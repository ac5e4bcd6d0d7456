package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/triage"
)

// sameTopic is the one rule by which a mark (a dead_letter_resolution row) counts for a topic:
// it was written under the topic's ID now, or either ID is unknown (empty: a mark from before
// migration 041, or a broker without topic IDs). A mark of a topic deleted since, whose name a
// new topic took, does not: the new topic's records are open. Every reader and writer here
// applies it (ErrorGroupEpisodes, which knows no topic ID, does not); mark and now are SQL
// expressions.
func sameTopic(mark, now string) string {
	return "(" + mark + " = '' OR " + now + " = '' OR " + mark + " = " + now + ")"
}

// SetResolutions puts marks into state, audited before effect (auditedChange), for the topic
// whose ID is topicID. It returns how many records changed state (a record already in it is not
// counted; none is written for opening a record that is open; a mark of another topic of the
// same name is replaced, the record was open).
func (s *Triage) SetResolutions(ctx context.Context, e audit.Entry, cluster, topic, topicID string, marks []triage.Mark, state, reason string) (int64, error) {
	if !validState(state) {
		return 0, ops.Invalid("state", "must be open, resolved, ignored or replayed")
	}
	n, err := s.auditedChange(ctx, e, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return setResolutions(ctx, tx, cluster, topic, topicID, marks, state, e.Actor, reason, "")
	})
	if err != nil {
		return 0, fmt.Errorf("dead-letter resolutions %s/%s: %w", cluster, topic, err)
	}
	return n, nil
}

func validState(s string) bool {
	for _, st := range triage.States {
		if s == st {
			return true
		}
	}
	return false
}

// setResolutions writes the marks in tx; it returns how many records changed state.
func setResolutions(ctx context.Context, tx pgx.Tx, cluster, topic, topicID string, marks []triage.Mark, state, actor, reason, jobID string) (int64, error) {
	if len(marks) == 0 {
		return 0, nil
	}
	parts, offs := make([]int32, len(marks)), make([]int64, len(marks))
	types, causes := make([]string, len(marks)), make([]string, len(marks))
	for i, m := range marks {
		parts[i], offs[i] = m.Partition, m.Offset
		types[i], causes[i] = ops.CleanText(m.ExceptionType, 500), ops.CleanText(m.ExceptionCause, 500)
	}
	actor, reason = ops.CleanText(actor, 500), ops.CleanText(reason, 4000)
	// The rows are locked in their key's order whatever the order of marks, as every writer of
	// the table does: two changes of the same records at once then wait for each other instead
	// of each holding a row the other needs (a deadlock, which PostgreSQL ends by failing one).
	if state == triage.StateOpen {
		// Opening a record that has no row changes nothing: no row is open; nor does opening one
		// whose row is another topic's (it is open).
		tag, err := tx.Exec(ctx, `WITH locked AS MATERIALIZED (SELECT r.partition, r."offset" FROM dead_letter_resolution r
				JOIN unnest($5::int[], $6::bigint[]) AS u(p, o) ON r.partition = u.p AND r."offset" = u.o
				WHERE r.cluster = $1 AND r.topic = $2 AND r.state <> 'open' AND `+sameTopic("r.topic_id", "$7")+`
				ORDER BY r.partition, r."offset" FOR UPDATE)
			UPDATE dead_letter_resolution r SET state = 'open', actor = $3, at = now(), reason = $4, job_id = ''
			FROM locked l
			WHERE r.cluster = $1 AND r.topic = $2 AND r.partition = l.partition AND r."offset" = l."offset" AND r.state <> 'open'`,
			cluster, topic, actor, reason, parts, offs, topicID)
		return tag.RowsAffected(), err
	}
	// A row of another topic of the same name is that topic's mark: replaced whole (its record
	// was open), never kept in part.
	same := sameTopic("r.topic_id", "EXCLUDED.topic_id")
	tag, err := tx.Exec(ctx, `INSERT INTO dead_letter_resolution AS r
			(cluster, topic, partition, "offset", state, exception_type, exception_cause, actor, reason, job_id, topic_id)
		SELECT DISTINCT ON (u.p, u.o) $1, $2, u.p, u.o, $3, u.t, u.c, $4, $5, $6, $11
		FROM unnest($7::int[], $8::bigint[], $9::text[], $10::text[]) AS u(p, o, t, c)
		ORDER BY u.p, u.o
		ON CONFLICT (cluster, topic, partition, "offset") DO UPDATE SET state = EXCLUDED.state,
			exception_type = CASE WHEN EXCLUDED.exception_type = '' AND `+same+` THEN r.exception_type ELSE EXCLUDED.exception_type END,
			exception_cause = CASE WHEN EXCLUDED.exception_type = '' AND `+same+` THEN r.exception_cause ELSE EXCLUDED.exception_cause END,
			actor = EXCLUDED.actor, at = now(), reason = EXCLUDED.reason, job_id = EXCLUDED.job_id,
			topic_id = CASE WHEN EXCLUDED.topic_id = '' THEN r.topic_id ELSE EXCLUDED.topic_id END
		WHERE (r.state <> EXCLUDED.state OR r.job_id <> EXCLUDED.job_id OR NOT `+same+`)
			-- A record a replay job published keeps that history: a person's resolved or ignored
			-- (a group's, a filter's) overwrote replayed and lost the job's id. Opening it still may.
			AND NOT (r.state = 'replayed' AND EXCLUDED.job_id = '' AND `+same+`)`,
		cluster, topic, state, actor, reason, jobID, parts, offs, types, causes, topicID)
	return tag.RowsAffected(), err
}

// MarkReplayed marks the records a replay job published as replayed, with the job's id, for the
// topic its plan read (the plan's topic ID; a job does not run on a topic created again since).
// Called after the ledger has them settled (a mark is never ahead of the ledger); marks repeated
// by a resumed run change nothing.
func (s *Triage) MarkReplayed(ctx context.Context, jobID, actor, cluster, topic string, marks []triage.Mark) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var topicID string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT p.source->>'topic_id' FROM replay_job j JOIN replay_plan p ON p.id = j.plan_id
			WHERE j.id = $1), '')`, jobID).Scan(&topicID); err != nil {
			return err
		}
		_, err := setResolutions(ctx, tx, cluster, topic, topicID, marks, triage.StateReplayed, actor, "replayed by job "+jobID, jobID)
		return err
	})
	if err != nil {
		return unavailable(err, "mark replayed %s/%s", cluster, topic)
	}
	return nil
}

// MarkJobReplayed marks every record of a finished Kafka job that the ledger says was published
// and is not marked yet: the sweep that makes the marks complete when a crash came between a
// batch's settle and its marks. The exception cause is not in the plan; the type is.
func (s *Triage) MarkJobReplayed(ctx context.Context, jobID string) error {
	// A mark of another topic of the same name (the plan's topic ID is not the row's) is replaced
	// whole, whenever it was written.
	same := sameTopic("r.topic_id", "EXCLUDED.topic_id")
	_, err := s.pool.Exec(ctx, `INSERT INTO dead_letter_resolution AS r
			(cluster, topic, partition, "offset", state, exception_type, actor, reason, job_id, topic_id)
		SELECT p.source->>'cluster', p.source->>'topic', i.partition, i.position, 'replayed', i.error_group, j.actor,
			'replayed by job ' || j.id, j.id, coalesce(p.source->>'topic_id', '')
		FROM replay_job j JOIN replay_plan p ON p.id = j.plan_id
		JOIN replay_ledger l ON l.job_id = j.id AND l.outcome = 'published'
		JOIN replay_plan_item i ON i.plan_id = j.plan_id AND i.seq = l.seq
		WHERE j.id = $1 AND p.source->>'kind' = 'kafka' AND i.partition IS NOT NULL AND i.position IS NOT NULL
		ORDER BY 1, 2, 3, 4 -- the key's order, as setResolutions locks
		ON CONFLICT (cluster, topic, partition, "offset") DO UPDATE SET state = 'replayed', actor = EXCLUDED.actor,
			at = now(), reason = EXCLUDED.reason, job_id = EXCLUDED.job_id,
			exception_type = CASE WHEN `+same+` THEN r.exception_type ELSE EXCLUDED.exception_type END,
			exception_cause = CASE WHEN `+same+` THEN r.exception_cause ELSE '' END,
			topic_id = CASE WHEN EXCLUDED.topic_id = '' THEN r.topic_id ELSE EXCLUDED.topic_id END
		WHERE r.job_id <> EXCLUDED.job_id AND (r.at < (SELECT created_at FROM replay_job WHERE id = $1) OR NOT `+same+`)`, jobID)
	if err != nil {
		return unavailable(err, "mark job %s replayed", jobID)
	}
	return nil
}

// Resolutions reads the resolution of each of keys that has one, for the topic whose ID is
// topicID; a key missing from the answer is open, never marked (or marked for another topic of
// the same name).
func (s *Triage) Resolutions(ctx context.Context, cluster, topic, topicID string, keys []triage.RecordKey) (map[triage.RecordKey]triage.Resolution, error) {
	out := map[triage.RecordKey]triage.Resolution{}
	if len(keys) == 0 {
		return out, nil
	}
	parts, offs := make([]int32, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		parts[i], offs[i] = k.Partition, k.Offset
	}
	rows, err := s.pool.Query(ctx, `SELECT r.partition, r."offset", r.state, r.actor, r.at, r.reason, r.job_id
		FROM dead_letter_resolution r JOIN unnest($3::int[], $4::bigint[]) AS u(p, o) ON r.partition = u.p AND r."offset" = u.o
		WHERE r.cluster = $1 AND r.topic = $2 AND `+sameTopic("r.topic_id", "$5"), cluster, topic, parts, offs, topicID)
	if err != nil {
		return nil, unavailable(err, "dead-letter resolutions")
	}
	defer rows.Close()
	for rows.Next() {
		var k triage.RecordKey
		var r triage.Resolution
		if err := rows.Scan(&k.Partition, &k.Offset, &r.State, &r.Actor, &r.At, &r.Reason, &r.JobID); err != nil {
			return nil, fmt.Errorf("dead-letter resolutions: %w", err)
		}
		out[k] = r
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err, "dead-letter resolutions")
	}
	return out, nil
}

// SettledStates reads the state of every record of a topic (whose ID is topicID) that is not
// open (a record missing from the answer is open), for a filter's resolution variable: one read
// of the settled index for a whole scan rather than one per record.
func (s *Triage) SettledStates(ctx context.Context, cluster, topic, topicID string) (map[triage.RecordKey]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT partition, "offset", state FROM dead_letter_resolution r
		WHERE cluster = $1 AND topic = $2 AND state <> 'open' AND `+sameTopic("r.topic_id", "$3"), cluster, topic, topicID)
	if err != nil {
		return nil, unavailable(err, "dead-letter resolutions %s/%s", cluster, topic)
	}
	defer rows.Close()
	out := map[triage.RecordKey]string{}
	for rows.Next() {
		var k triage.RecordKey
		var st string
		if err := rows.Scan(&k.Partition, &k.Offset, &st); err != nil {
			return nil, unavailable(err, "dead-letter resolutions %s/%s", cluster, topic)
		}
		out[k] = st
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err, "dead-letter resolutions %s/%s", cluster, topic)
	}
	return out, nil
}

// SettledDeadLetters counts, per topic, the records inside spans (each partition's current
// [start, end): records gone by retention do not count) that are not open, by the marks of the
// span's topic ID. It is settled's count, summed: SettledByErrorGroup's over the same spans adds
// up to it.
func (s *Triage) SettledDeadLetters(ctx context.Context, cluster string, spans []triage.Span) (map[string]int64, error) {
	counts, err := s.settled(ctx, cluster, spans)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for t, groups := range counts {
		for _, n := range groups {
			out[t] += n
		}
	}
	return out, nil
}

// SettledByErrorGroup counts the records inside spans of one topic that are not open, per error
// group (the type and cause the marks keep: ops.CleanText of the record's). A record marked by a
// replay job has no cause recorded: it counts for its type's group with an empty cause only.
func (s *Triage) SettledByErrorGroup(ctx context.Context, cluster, topic string, spans []triage.Span) (map[triage.GroupKey]int64, error) {
	spans = slices.Clone(spans)
	for i := range spans {
		spans[i].Topic = topic
	}
	counts, err := s.settled(ctx, cluster, spans)
	if err != nil {
		return nil, err
	}
	if counts[topic] == nil {
		return map[triage.GroupKey]int64{}, nil
	}
	return counts[topic], nil
}

// settled is the one count of what is no longer open, per topic and error group: the marks
// inside spans that are not open and are of the span's topic (sameTopic). The DLT list, the
// overview and the error groups all read it, so their open counts agree.
func (s *Triage) settled(ctx context.Context, cluster string, spans []triage.Span) (map[string]map[triage.GroupKey]int64, error) {
	out := map[string]map[triage.GroupKey]int64{}
	if len(spans) == 0 {
		return out, nil
	}
	topics, ids, parts, starts, ends := spanArrays(spans)
	rows, err := s.pool.Query(ctx, `SELECT r.topic, r.exception_type, r.exception_cause, count(*) FROM dead_letter_resolution r
		JOIN unnest($2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[]) AS u(t, id, p, lo, hi)
		  ON r.topic = u.t AND r.partition = u.p AND r."offset" >= u.lo AND r."offset" < u.hi
		WHERE r.cluster = $1 AND r.state <> 'open' AND `+sameTopic("r.topic_id", "u.id")+`
		GROUP BY 1, 2, 3`, cluster, topics, ids, parts, starts, ends)
	if err != nil {
		return nil, unavailable(err, "settled dead letters %s", cluster)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var k triage.GroupKey
		var n int64
		if err := rows.Scan(&t, &k.Type, &k.Cause, &n); err != nil {
			return nil, fmt.Errorf("settled dead letters %s: %w", cluster, err)
		}
		if out[t] == nil {
			out[t] = map[triage.GroupKey]int64{}
		}
		out[t][k] += n
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err, "settled dead letters %s", cluster)
	}
	return out, nil
}

func spanArrays(spans []triage.Span) (topics, ids []string, parts []int32, starts, ends []int64) {
	topics, ids, parts = make([]string, len(spans)), make([]string, len(spans)), make([]int32, len(spans))
	starts, ends = make([]int64, len(spans)), make([]int64, len(spans))
	for i, s := range spans {
		topics[i], ids[i], parts[i], starts[i], ends[i] = s.Topic, s.TopicID, s.Partition, s.Start, s.End
	}
	return topics, ids, parts, starts, ends
}

// AddNote appends n (its ID and At are set by the store), audited before effect (auditedChange):
// the note and its audit row commit together.
func (s *Triage) AddNote(ctx context.Context, e audit.Entry, n triage.Note) (triage.Note, error) {
	var typ, cause, msgID *string
	var part *int32
	var off *int64
	if n.MessageID != "" {
		id := ops.CleanText(n.MessageID, 500)
		msgID = &id
	}
	if n.Group != nil {
		t, c := ops.CleanText(n.Group.Type, 500), ops.CleanText(n.Group.Cause, 500)
		typ, cause = &t, &c
	}
	if n.Record != nil {
		part, off = &n.Record.Partition, &n.Record.Offset
	}
	n.Actor, n.Text, n.Link = ops.CleanText(n.Actor, 500), ops.CleanText(n.Text, 4000), ops.CleanText(n.Link, 2000)
	_, err := s.auditedChange(ctx, e, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		err := tx.QueryRow(ctx, `INSERT INTO dead_letter_note (source, exception_type, exception_cause, partition, "offset", message_id, actor, text, link)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id, at`, n.Source, typ, cause, part, off, msgID, n.Actor, n.Text, n.Link).Scan(&n.ID, &n.At)
		return 1, err
	})
	if err != nil {
		return triage.Note{}, fmt.Errorf("note on %s: %w", n.Source, err)
	}
	return n, nil
}

// Notes lists the notes of a source, oldest first (they read as a conversation), at most triage.MaxNotes
// (the newest).
func (s *Triage) Notes(ctx context.Context, source string) ([]triage.Note, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM (SELECT id, source, exception_type, exception_cause, partition, "offset", coalesce(message_id, ''), actor, at, text, link
		FROM dead_letter_note WHERE source = $1 ORDER BY at DESC, id DESC LIMIT $2) n ORDER BY at, id`, source, triage.MaxNotes)
	if err != nil {
		return nil, unavailable(err, "notes of %s", source)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (triage.Note, error) {
		var n triage.Note
		var typ, cause *string
		var part *int32
		var off *int64
		if err := r.Scan(&n.ID, &n.Source, &typ, &cause, &part, &off, &n.MessageID, &n.Actor, &n.At, &n.Text, &n.Link); err != nil {
			return n, err
		}
		if typ != nil {
			n.Group = &triage.GroupKey{Type: *typ}
			if cause != nil {
				n.Group.Cause = *cause
			}
		}
		if part != nil && off != nil {
			n.Record = &triage.RecordKey{Partition: *part, Offset: *off}
		}
		return n, nil
	})
	if err != nil {
		return nil, unavailable(err, "notes of %s", source)
	}
	return out, nil
}

// SetOutboxResolutions puts outbox events (by row id) into state, audited before effect
// (auditedChange). It returns how many events changed state (none is written for opening an
// event that is open).
func (s *Triage) SetOutboxResolutions(ctx context.Context, e audit.Entry, outbox string, ids []int64, deaths []string, state, reason string) (int64, error) {
	if !validState(state) {
		return 0, ops.Invalid("state", "must be open, resolved, ignored or replayed")
	}
	n, err := s.auditedChange(ctx, e, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return setOutboxResolutions(ctx, tx, outbox, ids, deaths, state, e.Actor, reason, "")
	})
	if err != nil {
		return 0, fmt.Errorf("outbox resolutions %s: %w", outbox, err)
	}
	return n, nil
}

func setOutboxResolutions(ctx context.Context, tx pgx.Tx, outbox string, ids []int64, deaths []string, state, actor, reason, jobID string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	if len(deaths) != len(ids) {
		deaths = make([]string, len(ids)) // about any death
	}
	actor, reason = ops.CleanText(actor, 500), ops.CleanText(reason, 4000)
	// The rows are locked in the events' order whatever the order of ids (see setResolutions).
	if state == triage.StateOpen {
		tag, err := tx.Exec(ctx, `WITH locked AS MATERIALIZED (SELECT event FROM outbox_resolution
				WHERE outbox = $1 AND event = ANY($4) AND state <> 'open' ORDER BY event FOR UPDATE)
			UPDATE outbox_resolution r SET state = 'open', actor = $2, at = now(), reason = $3, job_id = ''
			FROM locked l WHERE r.outbox = $1 AND r.event = l.event AND r.state <> 'open'`, outbox, actor, reason, ids)
		return tag.RowsAffected(), err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO outbox_resolution AS r (outbox, event, state, actor, reason, job_id, death)
		SELECT DISTINCT ON (u) $1, u, $2, $3, $4, $5, d FROM unnest($6::bigint[], $7::text[]) AS x(u, d) ORDER BY u
		ON CONFLICT (outbox, event) DO UPDATE SET state = EXCLUDED.state, actor = EXCLUDED.actor, at = now(),
			reason = EXCLUDED.reason, job_id = EXCLUDED.job_id, death = EXCLUDED.death
		WHERE r.state <> EXCLUDED.state OR r.job_id <> EXCLUDED.job_id OR r.death <> EXCLUDED.death`,
		outbox, state, actor, reason, jobID, ids, deaths)
	return tag.RowsAffected(), err
}

// MarkOutboxReplayed marks the events a replay job requeued as replayed, with the job's id,
// after the ledger has them (a mark is never ahead of it).
func (s *Triage) MarkOutboxReplayed(ctx context.Context, jobID, actor, outbox string, ids []int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := setOutboxResolutions(ctx, tx, outbox, ids, nil, triage.StateReplayed, actor, "replayed by job "+jobID, jobID)
		return err
	})
	if err != nil {
		return unavailable(err, "mark replayed outbox %s", outbox)
	}
	return nil
}

// ReopenRequeuedOutbox opens the resolved or ignored marks of events an operator requeued (the
// outbox page's or the API's requeue, not a replay job's, which marks them replayed): the mark
// was about the death the event left, so if it dies again it is open, as a replayed one is.
// Other marks (open, replayed) are left as they are. It returns how many marks it opened.
func (s *Triage) ReopenRequeuedOutbox(ctx context.Context, actor, outbox string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	actor = ops.CleanText(actor, 500)
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The rows are locked in the events' order whatever the order of ids (see setResolutions).
		tag, err := tx.Exec(ctx, `WITH locked AS MATERIALIZED (SELECT event FROM outbox_resolution
				WHERE outbox = $1 AND event = ANY($3) AND state IN ('resolved', 'ignored') ORDER BY event FOR UPDATE)
			UPDATE outbox_resolution r SET state = 'open', actor = $2, at = now(),
				reason = 'requeued by ' || $2 || ': the earlier resolution was about the death it left', job_id = ''
			FROM locked l WHERE r.outbox = $1 AND r.event = l.event AND r.state IN ('resolved', 'ignored')`, outbox, actor, ids)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, unavailable(err, "reopen requeued outbox %s", outbox)
	}
	return n, nil
}

// OutboxResolutions reads the resolution of each of ids that has one; an id missing from the
// answer is open, never marked.
func (s *Triage) OutboxResolutions(ctx context.Context, outbox string, ids []int64) (map[int64]triage.Resolution, error) {
	out := map[int64]triage.Resolution{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT event, state, actor, at, reason, job_id, death FROM outbox_resolution
		WHERE outbox = $1 AND event = ANY($2)`, outbox, ids)
	if err != nil {
		return nil, unavailable(err, "outbox resolutions %s", outbox)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r triage.Resolution
		if err := rows.Scan(&id, &r.State, &r.Actor, &r.At, &r.Reason, &r.JobID, &r.Death); err != nil {
			return nil, unavailable(err, "outbox resolutions %s", outbox)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err, "outbox resolutions %s", outbox)
	}
	return out, nil
}

// SettledOutboxEvents lists the events of an outbox marked resolved or ignored, each with the
// death its mark is about ("" for any): what the overview stops counting while they are DEAD in it.
func (s *Triage) SettledOutboxEvents(ctx context.Context, outbox string) (map[int64]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT event, death FROM outbox_resolution WHERE outbox = $1 AND state IN ('resolved', 'ignored')`, outbox)
	if err != nil {
		return nil, unavailable(err, "settled outbox events %s", outbox)
	}
	out := map[int64]string{}
	var id int64
	var death string
	if _, err := pgx.ForEachRow(rows, []any{&id, &death}, func() error { out[id] = death; return nil }); err != nil {
		return nil, unavailable(err, "settled outbox events %s", outbox)
	}
	return out, nil
}
