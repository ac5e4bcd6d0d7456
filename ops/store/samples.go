package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
)

// writer is what the sample writes need: the pool, or the transaction of a fenced write.
type writer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// PutSnapshot stores a successful sample: it replaces the source's snapshot, error fields included.
// It is not fenced: the sampler writes through WriteSample.
func (s *Samples) PutSnapshot(ctx context.Context, snap history.Snapshot) error {
	return putSnapshot(ctx, s.pool, snap)
}

func putSnapshot(ctx context.Context, db writer, snap history.Snapshot) error {
	data := snap.Data
	if len(data) == 0 {
		data = []byte("{}")
	}
	_, err := db.Exec(ctx, `INSERT INTO snapshot (kind, name, at, error, error_at, data)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, name) DO UPDATE
		SET at = excluded.at, error = excluded.error, error_at = excluded.error_at, data = excluded.data`,
		snap.Kind, snap.Name, nullTime(snap.At), snap.Error, nullTime(snap.ErrorAt), data)
	if err != nil {
		return unavailable(err, "snapshot %s/%s: put", snap.Kind, snap.Name)
	}
	return nil
}

// SetSnapshotError records a failed sample and keeps the last good data and its time, so readers
// see what was last known together with why it is not current.
func (s *Samples) SetSnapshotError(ctx context.Context, kind, name, msg string, at time.Time) error {
	return setSnapshotError(ctx, s.pool, kind, name, msg, at)
}

func setSnapshotError(ctx context.Context, db writer, kind, name, msg string, at time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO snapshot (kind, name, error, error_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, name) DO UPDATE SET error = excluded.error, error_at = excluded.error_at`,
		kind, name, msg, at)
	if err != nil {
		return unavailable(err, "snapshot %s/%s: set error", kind, name)
	}
	return nil
}

// Snapshot reads one source's snapshot. It returns ops.ErrNotFound when the source was never
// sampled.
func (s *Samples) Snapshot(ctx context.Context, kind, name string) (history.Snapshot, error) {
	return s.SnapshotIfChanged(ctx, kind, name, time.Time{})
}

// SnapshotIfChanged is history.Snapshot for a reader that holds a copy sampled at have: when the stored
// sample is still that one, Data is nil (the error fields are current either way), so revalidating
// a cached snapshot costs one small row instead of the whole document. A zero have always reads
// Data.
func (s *Samples) SnapshotIfChanged(ctx context.Context, kind, name string, have time.Time) (history.Snapshot, error) {
	snap := history.Snapshot{Kind: kind, Name: name}
	var at, errorAt *time.Time
	err := s.pool.QueryRow(ctx, `SELECT at, error, error_at,
			CASE WHEN $3::timestamptz IS NULL OR at IS DISTINCT FROM $3 THEN data END
		FROM snapshot WHERE kind = $1 AND name = $2`,
		kind, name, nullTime(have)).Scan(&at, &snap.Error, &errorAt, &snap.Data)
	switch {
	case isNoRows(err):
		return history.Snapshot{}, ops.NotFound("no %s snapshot of %q yet", kind, name)
	case err != nil:
		return history.Snapshot{}, unavailable(err, "snapshot %s/%s", kind, name)
	}
	if at != nil {
		snap.At = *at
	}
	if errorAt != nil {
		snap.ErrorAt = *errorAt
	}
	return snap, nil
}

// InsertKafkaGroupSamples appends samples with one COPY. A sample with the same cluster, group and
// At as a stored one fails the whole batch with ops.ErrConflict.
func (s *Samples) InsertKafkaGroupSamples(ctx context.Context, samples []history.KafkaGroupSample) error {
	return insertKafkaGroupSamples(ctx, s.pool, samples)
}

func insertKafkaGroupSamples(ctx context.Context, db writer, samples []history.KafkaGroupSample) error {
	return copySamples(ctx, db, "kafka", "kafka_group_sample", []string{"cluster", "group_name", "at", "total_lag", "state",
		"members", "status", "topics", "partitions", "committed", "lag", "max_lag_ms"}, samples,
		func(g history.KafkaGroupSample) []any {
			n := len(g.Partitions)
			topics, parts := make([]string, n), make([]int32, n)
			committed, lag := make([]int64, n), make([]int64, n)
			for j, p := range g.Partitions {
				topics[j], parts[j], committed[j], lag[j] = p.Topic, p.Partition, p.Committed, p.Lag
			}
			maxLag := int64(-1)
			if g.MaxTimeLag >= 0 {
				maxLag = g.MaxTimeLag.Milliseconds()
			}
			return []any{g.Cluster, g.Group, g.At, g.TotalLag, g.State, int32(g.Members), g.Status,
				topics, parts, committed, lag, maxLag}
		})
}

// copySamples appends samples to table with one COPY, each as row gives it. A sample already
// stored (the table's unique key) fails the whole batch with ops.ErrConflict.
func copySamples[T any](ctx context.Context, db writer, what, table string, cols []string, samples []T, row func(T) []any) error {
	if len(samples) == 0 {
		return nil
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(samples) {
			return nil, nil
		}
		i++
		return row(samples[i-1]), nil
	})
	if _, err := db.CopyFrom(ctx, pgx.Identifier{table}, cols, src); err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
			return fmt.Errorf("%s samples: insert: %w: %w", what, ops.ErrConflict, err)
		}
		return unavailable(err, "%s samples: insert", what)
	}
	return nil
}

// KafkaGroupSamples reads the samples taken at or after since, ordered by group and time: of one
// group, or of every group of the cluster when group is empty (a new leader's warm-up).
func (s *Samples) KafkaGroupSamples(ctx context.Context, cluster, group string, since time.Time) ([]history.KafkaGroupSample, error) {
	const cols = `SELECT group_name, at, total_lag, state, members, status, topics, partitions, committed, lag
		FROM kafka_group_sample `
	var (
		rows pgx.Rows
		err  error
	)
	if group == "" {
		rows, err = s.pool.Query(ctx, cols+`WHERE cluster = $1 AND at >= $2 ORDER BY group_name, at`, cluster, since)
	} else {
		rows, err = s.pool.Query(ctx, cols+`WHERE cluster = $1 AND group_name = $2 AND at >= $3 ORDER BY at`,
			cluster, group, since)
	}
	if err != nil {
		return nil, unavailable(err, "kafka samples %s: read", cluster)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.KafkaGroupSample, error) {
		g := history.KafkaGroupSample{Cluster: cluster}
		var (
			members           int32
			topics            []string
			parts             []int32
			committed, lagArr []int64
		)
		if err := r.Scan(&g.Group, &g.At, &g.TotalLag, &g.State, &members, &g.Status,
			&topics, &parts, &committed, &lagArr); err != nil {
			return g, err
		}
		g.Members = int(members)
		g.Partitions = make([]history.KafkaPartitionSample, len(topics))
		for j := range topics {
			g.Partitions[j] = history.KafkaPartitionSample{Topic: topics[j], Partition: parts[j], Committed: committed[j], Lag: lagArr[j]}
		}
		return g, nil
	})
	if err != nil {
		return nil, unavailable(err, "kafka samples %s: read", cluster)
	}
	return out, nil
}

// KafkaGroupHistory reads one group's samples in [since, until], cut into at most maxPoints buckets
// of equal width (date_bin from since), keeping the maximum of each series per bucket so that
// spikes survive the downsampling. topK is the number of partition series (0 for none). A group
// with no samples in the range yields no points. maxPoints outside [1, history.MaxHistoryPoints], topK < 0
// or an empty range are ops.ErrInvalid.
func (s *Samples) KafkaGroupHistory(ctx context.Context, cluster, group string, since, until time.Time, maxPoints, topK int) (history.KafkaHistory, error) {
	switch {
	case maxPoints < 1 || maxPoints > history.MaxHistoryPoints:
		return history.KafkaHistory{}, ops.Invalid("max_points", fmt.Sprintf("must be between 1 and %d", history.MaxHistoryPoints))
	case topK < 0:
		return history.KafkaHistory{}, ops.Invalid("top_partitions", "must not be negative")
	case !until.After(since):
		return history.KafkaHistory{}, ops.Invalid("since", "must be before the end of the range")
	}
	// Width so that (until − since) / width < maxPoints at the database's microsecond precision:
	// every sample in the closed range then falls into one of bucket indexes 0 … maxPoints−1.
	width := (until.Sub(since)/time.Microsecond/time.Duration(maxPoints) + 1) * time.Microsecond
	rows, err := s.pool.Query(ctx, `
		WITH s AS MATERIALIZED (
			SELECT date_bin($5::interval, at, $3) AS b, at, total_lag, max_lag_ms, topics, partitions, lag
			FROM kafka_group_sample
			WHERE cluster = $1 AND group_name = $2 AND at >= $3 AND at <= $4
		),
		pb AS MATERIALIZED (   -- per bucket and partition: the highest known lag
			SELECT s.b, x.topic, x.part, max(x.lag) AS m
			FROM s, unnest(s.topics, s.partitions, s.lag) AS x(topic, part, lag)
			WHERE x.lag >= 0
			GROUP BY 1, 2, 3
		),
		top AS (
			SELECT topic, part, row_number() OVER (ORDER BY max(m) DESC, topic, part) AS rk
			FROM pb GROUP BY topic, part
			ORDER BY rk LIMIT $6
		),
		tb AS (
			SELECT b, max(at) AS at, max(total_lag) AS total, max(max_lag_ms) AS max_lag_ms FROM s GROUP BY b
		),
		grid AS (
			SELECT tb.b, array_agg(coalesce(pb.m, -1) ORDER BY top.rk) AS lags
			FROM tb CROSS JOIN top
			LEFT JOIN pb ON pb.b = tb.b AND pb.topic = top.topic AND pb.part = top.part
			GROUP BY tb.b
		)
		SELECT tb.at, tb.total, tb.max_lag_ms, coalesce(grid.lags, '{}'),
			ARRAY(SELECT topic FROM top ORDER BY rk), ARRAY(SELECT part FROM top ORDER BY rk)
		FROM tb LEFT JOIN grid USING (b)
		ORDER BY tb.b`,
		cluster, group, since, until, width, topK)
	if err != nil {
		return history.KafkaHistory{}, unavailable(err, "kafka history %s/%s", cluster, group)
	}
	var h history.KafkaHistory
	var topics []string
	var parts []int32
	pt := history.KafkaHistoryPoint{}
	var maxLagMS int64
	_, err = pgx.ForEachRow(rows, []any{&pt.At, &pt.TotalLag, &maxLagMS, &pt.Partitions, &topics, &parts}, func() error {
		pt.MaxTimeLag = -1
		if maxLagMS >= 0 {
			pt.MaxTimeLag = time.Duration(maxLagMS) * time.Millisecond
		}
		h.Points = append(h.Points, pt)
		pt.Partitions = nil // a fresh slice for the next row
		return nil
	})
	if err != nil {
		return history.KafkaHistory{}, unavailable(err, "kafka history %s/%s", cluster, group)
	}
	for i := range topics {
		h.Partitions = append(h.Partitions, history.KafkaPartitionKey{Topic: topics[i], Partition: parts[i]})
	}
	return h, nil
}

// pruneBatch bounds one DELETE, so retention never holds locks or builds WAL for minutes.
const pruneBatch = 5000

// PruneHistory deletes the samples (Kafka and RabbitMQ) taken before before, in batches, and
// returns how many it deleted. Snapshots are kept.
func (s *Samples) PruneHistory(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, table := range []string{"kafka_group_sample", "rabbit_queue_sample"} {
		for {
			tag, err := s.pool.Exec(ctx, `DELETE FROM `+table+` WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM `+table+` WHERE at < $1 LIMIT $2))`, before, pruneBatch)
			if err != nil {
				return total, unavailable(err, "prune %s", table)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < pruneBatch {
				break
			}
		}
	}
	return total, nil
}

// InsertRabbitQueueSamples appends samples with one COPY. A sample with the same broker, vhost,
// queue and At as a stored one fails the whole batch with ops.ErrConflict.
func (s *Samples) InsertRabbitQueueSamples(ctx context.Context, samples []history.RabbitQueueSample) error {
	return insertRabbitQueueSamples(ctx, s.pool, samples)
}

func insertRabbitQueueSamples(ctx context.Context, db writer, samples []history.RabbitQueueSample) error {
	return copySamples(ctx, db, "rabbit", "rabbit_queue_sample", []string{"broker", "vhost", "queue", "at", "ready",
		"unacked", "consumers", "publish_rate", "deliver_rate", "ack_rate", "redeliver_rate"}, samples,
		func(q history.RabbitQueueSample) []any {
			return []any{q.Broker, q.Vhost, q.Queue, q.At, q.Ready, q.Unacked, int32(q.Consumers),
				q.PublishRate, q.DeliverRate, q.AckRate, q.RedeliverRate}
		})
}

// RabbitQueueSamples reads every queue's samples of broker taken at or after since, ordered by
// vhost, queue and time (a new sampling leader's warm-up).
func (s *Samples) RabbitQueueSamples(ctx context.Context, broker string, since time.Time) ([]history.RabbitQueueSample, error) {
	rows, err := s.pool.Query(ctx, `SELECT vhost, queue, at, ready, unacked, consumers,
			publish_rate, deliver_rate, ack_rate, redeliver_rate
		FROM rabbit_queue_sample WHERE broker = $1 AND at >= $2 ORDER BY vhost, queue, at`, broker, since)
	if err != nil {
		return nil, unavailable(err, "rabbit samples %s: read", broker)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.RabbitQueueSample, error) {
		q := history.RabbitQueueSample{Broker: broker}
		var consumers int32
		err := r.Scan(&q.Vhost, &q.Queue, &q.At, &q.Ready, &q.Unacked, &consumers,
			&q.PublishRate, &q.DeliverRate, &q.AckRate, &q.RedeliverRate)
		q.Consumers = int(consumers)
		return q, err
	})
	if err != nil {
		return nil, unavailable(err, "rabbit samples %s: read", broker)
	}
	return out, nil
}

// RabbitQueueHistory reads one queue's samples in [since, until], cut into at most maxPoints
// buckets of equal width (date_bin from since). Depths keep the bucket's maximum, so that spikes
// survive the downsampling; rates its average. A queue without samples in the range yields no
// points (an empty, non-nil slice). maxPoints outside [1, history.MaxHistoryPoints] or an empty range are
// ops.ErrInvalid.
func (s *Samples) RabbitQueueHistory(ctx context.Context, broker, vhost, queue string, since, until time.Time, maxPoints int) ([]history.RabbitQueuePoint, error) {
	switch {
	case maxPoints < 1 || maxPoints > history.MaxHistoryPoints:
		return nil, ops.Invalid("max_points", fmt.Sprintf("must be between 1 and %d", history.MaxHistoryPoints))
	case !until.After(since):
		return nil, ops.Invalid("since", "must be before the end of the range")
	}
	// As in KafkaGroupHistory: (until − since) / width < maxPoints at microsecond precision.
	width := (until.Sub(since)/time.Microsecond/time.Duration(maxPoints) + 1) * time.Microsecond
	rows, err := s.pool.Query(ctx, `
		SELECT max(at), max(ready), max(unacked), max(consumers),
			avg(publish_rate), avg(deliver_rate), avg(ack_rate), avg(redeliver_rate)
		FROM rabbit_queue_sample
		WHERE broker = $1 AND vhost = $2 AND queue = $3 AND at >= $4 AND at <= $5
		GROUP BY date_bin($6::interval, at, $4)
		ORDER BY date_bin($6::interval, at, $4)`,
		broker, vhost, queue, since, until, width)
	if err != nil {
		return nil, unavailable(err, "rabbit history %s/%s/%s", broker, vhost, queue)
	}
	out := []history.RabbitQueuePoint{}
	var (
		p         history.RabbitQueuePoint
		consumers int32
	)
	_, err = pgx.ForEachRow(rows, []any{&p.At, &p.Ready, &p.Unacked, &consumers,
		&p.PublishRate, &p.DeliverRate, &p.AckRate, &p.RedeliverRate}, func() error {
		p.Consumers = int(consumers)
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, unavailable(err, "rabbit history %s/%s/%s", broker, vhost, queue)
	}
	return out, nil
}

// RecordErrorGroups folds sightings into the groups seen so far. A sighting whose first record
// comes more than window after the group's last one starts a new episode (count restarts);
// otherwise it extends the current one. Sightings may arrive twice (a round retried by a new
// leader): the timestamps make that harmless but the count (a hint on the page, not a ledger).
func (s *Samples) RecordErrorGroups(ctx context.Context, window time.Duration, sightings []history.ErrorGroupSighting) error {
	if len(sightings) == 0 {
		return nil
	}
	// The batch is one transaction: its groups are written in their key's order, whatever the
	// round's, so two writers of the same groups (a leader and the replica taking over) wait for
	// each other instead of each holding a group the other needs (a deadlock, which fails one).
	sightings = slices.Clone(sightings)
	slices.SortFunc(sightings, func(a, b history.ErrorGroupSighting) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Key, b.Key))
	})
	b := &pgx.Batch{}
	for _, g := range sightings {
		b.Queue(`INSERT INTO error_group AS g (source, group_key, exception_type, exception_cause, first_seen, last_seen,
				episode_start, count, sample_message, sample_partition, sample_offset, sample_masked_by)
			VALUES ($1, $2, $3, $4, $5, $6, $5, $7, $8, $9, $10, $12)
			ON CONFLICT (source, group_key) DO UPDATE SET
				episode_start = CASE WHEN EXCLUDED.first_seen - g.last_seen > $11::interval THEN EXCLUDED.first_seen ELSE g.episode_start END,
				count = CASE WHEN EXCLUDED.first_seen - g.last_seen > $11::interval THEN EXCLUDED.count ELSE g.count + EXCLUDED.count END,
				first_seen = LEAST(g.first_seen, EXCLUDED.first_seen),
				last_seen = GREATEST(g.last_seen, EXCLUDED.last_seen),
				sample_message = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_message ELSE g.sample_message END,
				sample_partition = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_partition ELSE g.sample_partition END,
				sample_offset = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_offset ELSE g.sample_offset END,
				sample_masked_by = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_masked_by ELSE g.sample_masked_by END`,
			g.Source, g.Key, ops.CleanText(g.ExceptionType, 500), ops.CleanText(g.ExceptionCause, 500), g.FirstAt, g.LastAt, g.Count,
			ops.CleanText(g.SampleMessage, 2000), g.SamplePartition, g.SampleOffset, window, g.SampleMaskedBy)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record error groups: %w: %w", ops.ErrUnavailable, err)
	}
	return nil
}

// ErrorGroupEpisodes lists the groups whose episode started at or after since, newest first, at
// most limit.
func (s *Samples) ErrorGroupEpisodes(ctx context.Context, since time.Time, limit int) ([]history.ErrorGroupEpisode, error) {
	rows, err := s.pool.Query(ctx, `SELECT source, group_key, exception_type, exception_cause, episode_start, last_seen,
			count, sample_message, sample_partition, sample_offset, episode_start, sample_masked_by
		FROM error_group g WHERE episode_start >= $1
		  -- A group whose records people resolved, ignored or replayed is no longer new trouble:
		  -- it is left out while the records marked are at least those of its episode, and comes
		  -- back when another one arrives (the sampler then counts it into the episode).
		  AND NOT (g.source LIKE 'kafka/%' AND (SELECT count(*) FROM dead_letter_resolution r
		      WHERE r.cluster = substring(g.source from '^kafka/(.*)/[^/]*$') AND r.topic = substring(g.source from '[^/]*$')
		        AND r.exception_type = g.exception_type AND r.exception_cause = g.exception_cause AND r.state <> 'open') >= g.count)
		ORDER BY episode_start DESC, source, group_key LIMIT $2`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("error groups: %w: %w", ops.ErrUnavailable, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.ErrorGroupEpisode, error) {
		var e history.ErrorGroupEpisode
		return e, r.Scan(&e.Source, &e.Key, &e.ExceptionType, &e.ExceptionCause, &e.FirstAt, &e.LastAt, &e.Count,
			&e.SampleMessage, &e.SamplePartition, &e.SampleOffset, &e.EpisodeStart, &e.SampleMaskedBy)
	})
	if err != nil {
		return nil, fmt.Errorf("error groups: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}
