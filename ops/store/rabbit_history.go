package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
)

// InsertRabbitQueueSamples appends samples with one COPY. A sample with the same broker, vhost,
// queue and At as a stored one fails the whole batch with ops.ErrConflict.
func (s *Samples) InsertRabbitQueueSamples(ctx context.Context, samples []history.RabbitQueueSample) error {
	return insertRabbitQueueSamples(ctx, s.pool, samples)
}

func insertRabbitQueueSamples(ctx context.Context, db writer, samples []history.RabbitQueueSample) error {
	if len(samples) == 0 {
		return nil
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(samples) {
			return nil, nil
		}
		q := samples[i]
		i++
		return []any{q.Broker, q.Vhost, q.Queue, q.At, q.Ready, q.Unacked, int32(q.Consumers),
			q.PublishRate, q.DeliverRate, q.AckRate, q.RedeliverRate}, nil
	})
	_, err := db.CopyFrom(ctx, pgx.Identifier{"rabbit_queue_sample"},
		[]string{"broker", "vhost", "queue", "at", "ready", "unacked", "consumers",
			"publish_rate", "deliver_rate", "ack_rate", "redeliver_rate"}, src)
	if err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "23505" {
			return fmt.Errorf("rabbit samples: insert: %w: %w", ops.ErrConflict, err)
		}
		return unavailable(err, "rabbit samples: insert")
	}
	return nil
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
