package notify

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/alerts"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/health"
)

// SilenceVocabulary is what a silence's kind and severity matchers may name: the health
// monitor's problem kinds and severities.
var SilenceVocabulary = alerts.Vocabulary{Kinds: health.Kinds, Severities: health.Severities}

// SilenceStore keeps the silences and the audit log (the console's store).
type SilenceStore interface {
	CreateSilence(ctx context.Context, s alerts.Silence) (alerts.Silence, error)
	// Silence reads one silence, ended or not; EndSilence ends it now (an ended one stays as it
	// was). Both: ops.ErrNotFound for an unknown id.
	Silence(ctx context.Context, id int64) (alerts.Silence, error)
	EndSilence(ctx context.Context, id int64) (alerts.Silence, error)
	audit.Log
}

// Watched is what the console watches, for refusing a silence that would silence nothing.
type Watched struct {
	Clusters []string // the Kafka clusters
	Brokers  []string // the RabbitMQ brokers
	// Groups lists a cluster's consumer groups in its latest lag sample; ok false when the
	// cluster was not sampled yet (what it holds is not known). Nil: groups are not checked.
	Groups func(ctx context.Context, cluster string) (groups []string, ok bool)
}

// Silences is how people set and end silences on notifications: each bounded by its setter's
// role (alerts.SilenceLimits), refused when it names a cluster or group the console does not
// watch (such a silence was accepted and silenced nothing while its author believed the noise
// handled), and audited — notify.silence, notify.silence_end: no intent row, no change.
type Silences struct {
	Store   SilenceStore
	Watched *Watched // nil: names are not checked
	Log     *slog.Logger
}

// Create sets the silence req asks for; base is the request's audit entry (actor, client).
func (s Silences) Create(ctx context.Context, base audit.Entry, req alerts.SilenceRequest) (alerts.Silence, error) {
	sil, err := req.Silence(time.Now(), SilenceVocabulary)
	if err != nil {
		return sil, err
	}
	if err := s.Watched.Refusal(ctx, sil.Matchers); err != nil {
		return sil, err
	}
	base.Action, base.Target, base.Reason = "notify.silence", "notifications", sil.Comment
	base.Detail = map[string]any{"matchers": sil.Matchers, "ends_at": sil.EndsAt.UTC()}
	done, err := s.intend(ctx, base)
	if err != nil {
		return sil, err
	}
	created, err := s.Store.CreateSilence(ctx, sil)
	if err != nil {
		done(err, nil)
		return created, err
	}
	done(nil, map[string]any{"matchers": sil.Matchers, "ends_at": sil.EndsAt.UTC(), "silence_id": created.ID})
	return created, nil
}

// End ends silence id now: an unknown one is ops.ErrNotFound before anything is written; one
// that has ended already is answered as it is, its outcome saying so (ending twice is not an
// error: two operators ending the same silence both get what they asked).
func (s Silences) End(ctx context.Context, base audit.Entry, id int64) (alerts.Silence, error) {
	sil, err := s.Store.Silence(ctx, id)
	if err != nil {
		return sil, err
	}
	base.Action, base.Target = "notify.silence_end", "silence/"+strconv.FormatInt(id, 10)
	base.Detail = map[string]any{"matchers": sil.Matchers, "ends_at": sil.EndsAt.UTC()}
	done, err := s.intend(ctx, base)
	if err != nil {
		return sil, err
	}
	ended, err := s.Store.EndSilence(ctx, id)
	if err != nil {
		done(err, nil)
		return ended, err
	}
	done(nil, map[string]any{"matchers": ended.Matchers, "ends_at": ended.EndsAt.UTC(), "already_ended": !sil.EndsAt.After(ended.EndsAt)})
	return ended, nil
}

func (s Silences) intend(ctx context.Context, e audit.Entry) (audit.Done, error) {
	one := int64(1)
	e.Count = &one
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	return audit.New(s.Store, log).Intend(ctx, e)
}

// Refusal refuses, in the user's words, matchers whose cluster or group name nothing w watches
// (the group: none of the latest lag samples lists it); nil when w is nil or cannot tell.
func (w *Watched) Refusal(ctx context.Context, m map[string]string) error {
	if w == nil || (w.Clusters == nil && w.Brokers == nil) {
		return nil
	}
	var names []string // each once: a Kafka cluster and a RabbitMQ broker may share a name
	for _, n := range append(slices.Clone(w.Clusters), w.Brokers...) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if c := m["cluster"]; c != "" && !slices.Contains(names, c) {
		return ops.Invalid("cluster", fmt.Sprintf("%q is none of the clusters and brokers the console watches (%s): this silence would silence nothing",
			ops.Echo(c), strings.Join(names, ", ")))
	}
	g := m["group"]
	if g == "" || w.Groups == nil {
		return nil
	}
	sampled := false
	for _, c := range w.Clusters {
		if m["cluster"] != "" && m["cluster"] != c {
			continue
		}
		groups, ok := w.Groups(ctx, c)
		if !ok {
			continue // not sampled yet: what it holds is not known
		}
		sampled = true
		if slices.Contains(groups, g) {
			return nil
		}
	}
	if !sampled {
		return nil // no refusal on a guess
	}
	return ops.Invalid("group", fmt.Sprintf("no consumer group %q is in the latest lag samples: this silence would silence nothing; "+
		"name a group the Kafka pages list", ops.Echo(g)))
}

// TestSender sends test notifications (the Notifier).
type TestSender interface {
	Channels() []string
	// Test sends a test notification to channel now; ops.ErrNotFound for an unknown channel.
	Test(ctx context.Context, channel, actor string) error
}

// SendTest sends a test notification to channel through sender (nil: none configured), for
// base's actor, audited (notify.test): an unknown channel is ops.ErrNotFound before anything is
// written; a channel that refused is the test's answer, and its outcome row says so.
func (s Silences) SendTest(ctx context.Context, sender TestSender, base audit.Entry, channel string) error {
	if sender == nil || !slices.Contains(sender.Channels(), channel) {
		return ops.NotFound("notification channel %q is not configured", ops.Echo(channel))
	}
	base.Action, base.Target = "notify.test", "channel/"+channel
	done, err := s.intend(ctx, base)
	if err != nil {
		return err
	}
	err = sender.Test(ctx, channel, base.Actor)
	done(err, nil)
	return err
}
