package sampler

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/redrive/redrive/ops/lease"
)

// Leadership is per source: each Kafka cluster and RabbitMQ broker has a lease in the store
// (lease.Lease) that one replica holds, renews every Interval/4 and loses when it stops
// renewing for one Interval (its TTL). Replicas split the sources evenly: none takes more than its
// fair share (sources ÷ live replicas, rounded up), and one holding two more than another live
// replica hands one over. Every write of a sample carries the lease's fencing token, and the store
// refuses it once another replica has taken the source over — a leader that was frozen (SIGSTOP, a
// long GC pause, a VM migration) steps down at its first write instead of overwriting its
// successor.

// renewsPerTTL is how many times per TTL a holder renews: three renewals may fail in a row (a slow
// store) before the lease lapses.
const renewsPerTTL = 4

// heldLease is a lease this replica holds, with the local deadline after which it stops writing
// under it unless renewed (the monotonic clock keeps running while the process is stopped).
type heldLease struct {
	lease lease.Lease
	until time.Time
}

// leadership is the sampler's record of the leases it holds. mu serializes syncs (Run's lease
// loop and SampleOnce) and guards held.
type leadership struct {
	mu     sync.Mutex
	held   map[string]heldLease // by source name
	joined bool                 // a heartbeat was stored, so shutdown removes the replica's row
}

// sourceName is the lease (and metric, and readiness) name of a source.
func kafkaSourceName(cluster string) string { return "kafka/" + cluster }
func rabbitSourceName(broker string) string { return "rabbitmq/" + broker }
func defaultReplicaID() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "replica"), os.Getpid(), hex.EncodeToString(b))
}

// preference orders the sources for this replica by rendezvous hashing, so replicas starting
// together reach for different sources first.
func preference(id string, sources []string) []string {
	score := func(src string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(src))
		return h.Sum64()
	}
	out := slices.Clone(sources)
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(score(b), score(a)) })
	return out
}

// syncLeases is one round of leadership: heartbeat, renew what is held, then take or hand over
// sources towards an even split. Errors are joined; a source whose renewal failed for a reason
// other than a takeover is kept until its local deadline, so one slow round trip does not cost it.
func (s *Sampler) syncLeases(ctx context.Context) error {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	defer func() { s.m.leader.Set(float64(len(s.lead.held))) }()
	var errs []error
	live, err := s.store.HeartbeatReplica(ctx, s.id, s.ttl)
	if err != nil {
		errs = append(errs, fmt.Errorf("sampler: %w", err))
	} else {
		s.lead.joined = true
	}
	for name, h := range s.lead.held {
		start := time.Now()
		l, err := s.store.RenewSourceLease(ctx, h.lease)
		switch {
		case errors.Is(err, lease.ErrFenced):
			delete(s.lead.held, name)
			s.log.Warn("sampler leadership lost: another replica took the source over", "source", name, "token", h.lease.Token)
			errs = append(errs, fmt.Errorf("sampler: %w", err))
		case err != nil:
			if time.Now().After(h.until) {
				delete(s.lead.held, name)
				s.log.Warn("sampler leadership lapsed: the lease could not be renewed", "source", name, "err", err)
			}
			errs = append(errs, fmt.Errorf("sampler: %w", err))
		default:
			s.lead.held[name] = heldLease{lease: l, until: start.Add(s.ttl)}
		}
	}
	if err != nil {
		return errors.Join(errs...) // without the live count, taking more would be a guess
	}
	states, err := s.store.SourceLeases(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("sampler: %w", err))...)
	}
	valid := map[string]bool{}
	count := make(map[string]int, len(live))
	for _, id := range live {
		count[id] = 0
	}
	for _, st := range states {
		if st.Valid {
			valid[st.Source] = true
			if _, ok := count[st.Owner]; ok && st.Owner != s.id {
				count[st.Owner]++
			}
		}
	}
	mine := len(s.lead.held)
	fewest := mine
	for id, n := range count {
		if id != s.id {
			fewest = min(fewest, n)
		}
	}
	fair := (len(s.order) + len(live) - 1) / len(live)
	switch {
	case mine > fair:
		s.handOver(ctx, mine-fair)
	case mine-fewest >= 2:
		s.handOver(ctx, 1)
	case mine < fair:
		for _, name := range s.order {
			if mine == fair {
				break
			}
			if _, ok := s.lead.held[name]; ok || valid[name] {
				continue
			}
			start := time.Now()
			l, ok, err := s.store.AcquireSourceLease(ctx, name, s.id, s.ttl)
			if err != nil {
				errs = append(errs, fmt.Errorf("sampler: %w", err))
				continue
			}
			if ok {
				s.lead.held[name] = heldLease{lease: l, until: start.Add(s.ttl)}
				mine++
				s.log.Info("sampler leadership taken", "source", name, "token", l.Token)
			}
		}
	}
	return errors.Join(errs...)
}

// handOver releases n held sources, the least preferred first, so that replicas with fewer take
// them on their next round.
func (s *Sampler) handOver(ctx context.Context, n int) {
	for i := len(s.order) - 1; i >= 0 && n > 0; i-- {
		h, ok := s.lead.held[s.order[i]]
		if !ok {
			continue
		}
		delete(s.lead.held, s.order[i])
		n--
		if err := s.store.ReleaseSourceLease(ctx, h.lease); err != nil {
			s.log.Warn("sampler: releasing a lease failed; it lapses on its own", "source", s.order[i], "err", err)
			continue
		}
		s.log.Info("sampler leadership handed over", "source", s.order[i])
	}
}

// leaseOf returns the lease of source when this replica holds it and may still write under it.
func (s *Sampler) leaseOf(source string) (lease.Lease, bool) {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	h, ok := s.lead.held[source]
	if !ok || !time.Now().Before(h.until) {
		return lease.Lease{}, false
	}
	return h.lease, true
}

// stepDown forgets source after the store refused a write under l (a takeover).
func (s *Sampler) stepDown(l lease.Lease) {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	if h, ok := s.lead.held[l.Source]; ok && h.lease.Token == l.Token {
		delete(s.lead.held, l.Source)
		s.m.leader.Set(float64(len(s.lead.held)))
		s.log.Warn("sampler stepped down: the store refused a write, another replica leads the source now",
			"source", l.Source, "token", l.Token)
	}
}

// releaseAll gives every lease up and removes the replica's row (shutdown).
func (s *Sampler) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	for name, h := range s.lead.held {
		if err := s.store.ReleaseSourceLease(ctx, h.lease); err != nil {
			s.log.Warn("sampler: releasing a lease failed; it lapses on its own", "source", name, "err", err)
		}
		delete(s.lead.held, name)
	}
	if s.lead.joined {
		_ = s.store.RemoveReplica(ctx, s.id)
	}
	s.m.leader.Set(0)
}

// Leads returns the sources this replica leads ("kafka/<cluster>", "rabbitmq/<broker>"), sorted.
func (s *Sampler) Leads() []string {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	out := make([]string, 0, len(s.lead.held))
	for name := range s.lead.held {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ReplicaID is the name this replica uses in leases (Options.ReplicaID or a generated one).
func (s *Sampler) ReplicaID() string { return s.id }
