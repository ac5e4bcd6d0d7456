package store_test

import (
	"github.com/redrive/redrive/ops/replay"
	"github.com/redrive/redrive/ops/sampler"
	"github.com/redrive/redrive/ops/store"
)

// The store is the adapter behind the interfaces its consumers declare (sampler's own tests use it,
// so the check lives here rather than beside the interface).
var _ sampler.Store = (*store.Store)(nil)
var _ replay.Store = (*store.Store)(nil)
