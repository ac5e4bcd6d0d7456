package ops

import (
	"errors"
	"fmt"
	"time"
)

// NotSampledYet answers a look-up in a source's snapshot before its first sample: unavailable
// (503), not not-found, since the sample is on its way. source is "kafka cluster" or the like.
func NotSampledYet(source, name string) error {
	return &Error{Kind: ErrUnavailable, Message: fmt.Sprintf("%s %q has not been sampled yet; retry in a few seconds", source, name)}
}

// ReadThrough reports whether a look-up that the snapshot sampled at answered with err is worth
// one live read from the source: the snapshot misses what was asked (it may have appeared since
// the sample) or there is no sample yet. Any other answer, found or not, stands.
func ReadThrough(err error, sampledAt time.Time) bool {
	return err != nil && (errors.Is(err, ErrNotFound) || sampledAt.IsZero())
}
