package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops/lease"
)

// ReplicaDirectory reads which console replicas there are and what each holds (ops/store).
// Errors are ops.ErrUnavailable.
type ReplicaDirectory interface {
	Replicas(ctx context.Context) (lease.ReplicaView, error)
}

// Replicas serves GET /api/v1/replicas (admin): every replica known to the store with its last
// heartbeat, the sources it leads and the replay jobs it holds; and every source with its leader.
type Replicas struct {
	dir ReplicaDirectory
}

// NewReplicas takes the store's replica directory.
func NewReplicas(dir ReplicaDirectory) *Replicas { return &Replicas{dir: dir} }

type replicaJSON struct {
	ID string `json:"id"`
	// Live is false once the heartbeat expired (the replica died or hangs) and for a replica
	// known only as a job's lease owner (it does not sample).
	Live          bool             `json:"live"`
	StartedAt     *time.Time       `json:"started_at"`
	LastHeartbeat *time.Time       `json:"last_heartbeat"`
	Sources       []string         `json:"sources"`
	Jobs          []replicaJobJSON `json:"jobs"`
}

type replicaJobJSON struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	LeaseUntil *time.Time `json:"lease_until"`
}

type sourceLeaseJSON struct {
	Source string `json:"source"`
	// Leader is the replica whose lease is valid; "" when none is (released, or lapsed and not
	// yet taken over).
	Leader    string     `json:"leader"`
	Token     int64      `json:"token"`
	ExpiresAt *time.Time `json:"expires_at"`
	RenewedAt time.Time  `json:"renewed_at"`
}

// API: GET /api/v1/replicas.
func (h *Replicas) API(c echo.Context) error {
	v, err := h.dir.Replicas(c.Request().Context())
	if err != nil {
		return err
	}
	out := struct {
		Replicas []*replicaJSON    `json:"replicas"`
		Sources  []sourceLeaseJSON `json:"sources"`
	}{Replicas: []*replicaJSON{}, Sources: []sourceLeaseJSON{}}
	byID := map[string]*replicaJSON{}
	get := func(id string) *replicaJSON {
		if r, ok := byID[id]; ok {
			return r
		}
		r := &replicaJSON{ID: id, Sources: []string{}, Jobs: []replicaJobJSON{}}
		byID[id] = r
		out.Replicas = append(out.Replicas, r)
		return r
	}
	for _, r := range v.Replicas {
		j := get(r.ID)
		j.Live, j.StartedAt, j.LastHeartbeat = r.Live, knownUTC(r.StartedAt), knownUTC(r.HeartbeatAt)
	}
	for _, l := range v.Leases {
		s := sourceLeaseJSON{Source: l.Source, Token: l.Token, ExpiresAt: knownUTC(l.ExpiresAt), RenewedAt: l.RenewedAt.UTC()}
		if l.Valid {
			s.Leader = l.Owner
			get(l.Owner).Sources = append(get(l.Owner).Sources, l.Source)
		}
		out.Sources = append(out.Sources, s)
	}
	for _, job := range v.Jobs {
		r := get(job.Owner)
		r.Jobs = append(r.Jobs, replicaJobJSON{ID: job.ID, Status: job.Status, LeaseUntil: knownUTC(job.LeaseUntil)})
	}
	return c.JSON(http.StatusOK, out)
}
