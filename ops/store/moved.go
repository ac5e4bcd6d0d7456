package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops/history"
)

// RabbitMoved counts, per queue of broker, the messages Redrive took out of it so far: those its
// RabbitMQ replay and discard jobs published or archived before acking them (the jobs' published
// counts, which the ledger's transactions keep: one row per job, never the ledger), and those
// archived without a job (a read's custody), which are archived before they are acked too.
// Restores from the archive (source kind archive) take nothing out of a queue and are not counted.
func (s *ReplayJobs) RabbitMoved(ctx context.Context, broker string) ([]history.RabbitMoved, error) {
	return collect(ctx, s.pool, func(r pgx.CollectableRow) (history.RabbitMoved, error) {
		var m history.RabbitMoved
		return m, r.Scan(&m.Vhost, &m.Queue, &m.Messages)
	}, "messages moved by Redrive", `SELECT vhost, queue, sum(n)::bigint FROM (
			SELECT coalesce(nullif(p.source->>'vhost', ''), '/') AS vhost, p.source->>'queue' AS queue, j.published::bigint AS n
			FROM replay_job j JOIN replay_plan p ON p.id = j.plan_id
			WHERE p.source->>'kind' = 'rabbitmq' AND p.source->>'broker' = $1 AND j.published > 0
			UNION ALL
			SELECT a.vhost, a.queue, 1 FROM archived_message a
			WHERE a.broker = $1 AND NOT EXISTS (SELECT FROM replay_job j WHERE j.id = a.job_id)
		) moved GROUP BY vhost, queue`, broker)
}
