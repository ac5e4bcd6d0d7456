package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/history"
)

// RecordErrorGroups folds sightings into the groups seen so far. A sighting whose first record
// comes more than window after the group's last one starts a new episode (count restarts);
// otherwise it extends the current one. Sightings may arrive twice (a round retried by a new
// leader): the timestamps make that harmless but the count (a hint on the page, not a ledger).
func (s *Samples) RecordErrorGroups(ctx context.Context, window time.Duration, sightings []history.ErrorGroupSighting) error {
	if len(sightings) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, g := range sightings {
		b.Queue(`INSERT INTO error_group AS g (source, group_key, exception_type, exception_cause, first_seen, last_seen,
				episode_start, count, sample_message, sample_partition, sample_offset)
			VALUES ($1, $2, $3, $4, $5, $6, $5, $7, $8, $9, $10)
			ON CONFLICT (source, group_key) DO UPDATE SET
				episode_start = CASE WHEN EXCLUDED.first_seen - g.last_seen > $11::interval THEN EXCLUDED.first_seen ELSE g.episode_start END,
				count = CASE WHEN EXCLUDED.first_seen - g.last_seen > $11::interval THEN EXCLUDED.count ELSE g.count + EXCLUDED.count END,
				first_seen = LEAST(g.first_seen, EXCLUDED.first_seen),
				last_seen = GREATEST(g.last_seen, EXCLUDED.last_seen),
				sample_message = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_message ELSE g.sample_message END,
				sample_partition = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_partition ELSE g.sample_partition END,
				sample_offset = CASE WHEN EXCLUDED.last_seen >= g.last_seen THEN EXCLUDED.sample_offset ELSE g.sample_offset END`,
			g.Source, g.Key, ops.CleanText(g.ExceptionType, 500), ops.CleanText(g.ExceptionCause, 500), g.FirstAt, g.LastAt, g.Count,
			ops.CleanText(g.SampleMessage, 2000), g.SamplePartition, g.SampleOffset, window)
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
			count, sample_message, sample_partition, sample_offset, episode_start
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
			&e.SampleMessage, &e.SamplePartition, &e.SampleOffset, &e.EpisodeStart)
	})
	if err != nil {
		return nil, fmt.Errorf("error groups: %w: %w", ops.ErrUnavailable, err)
	}
	return out, nil
}
