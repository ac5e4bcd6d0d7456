package sampler

import "time"

// Interval is how often the sampler samples each source: pages that show its snapshots refresh
// at this pace.
func (s *Sampler) Interval() time.Duration { return s.interval }
