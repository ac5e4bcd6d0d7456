package store

import (
	"context"

	"github.com/redrive/redrive/ops/pglock"
)

// Lock takes the advisory lock named key on the store's database (pglock.Lock): every replica of
// the console that uses this database takes turns on it.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), err error) {
	return pglock.Lock(ctx, s.pool.Config().ConnConfig, key)
}
