package redact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redrive/redrive/ops/history"
	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// Record is the masking pass over one record: the configured headers, the JSON paths of
// the value (a value cut for size or not JSON is masked whole when paths are configured), then
// everything derived from what was hidden — other headers quoting it and the decoded dead-letter
// fields, message id included (see messageMask). It reports whether anything was masked.
func (red *Rules) Record(r kafkamodel.Record) (kafkamodel.Record, bool) {
	if red == nil {
		return r, false
	}
	m := &messageMask{}
	redacted := false
	hs := make([]kafkamodel.Header, len(r.Headers))
	for i, hd := range r.Headers {
		if red.Header(hd.Key) {
			m.secrets = append(m.secrets, string(hd.Value))
			hd.Value, redacted = []byte(Redacted), true
		}
		hs[i] = hd
	}
	if d := r.ValueSchema; d != nil && d.JSON != nil && len(red.paths) > 0 {
		// The paths apply to the decoded value; the original bytes carry every field in a form
		// no path can reach, so they are withheld whole.
		dv := *d
		var changed bool
		dv.JSON, changed = red.maskBody(d.JSON, false, m)
		r.ValueSchema, r.Value = &dv, []byte(Redacted)
		redacted = redacted || changed
	} else if v, changed := red.maskBody(r.Value, r.Truncated, m); changed {
		r.Value, redacted = v, true
	}
	for i, hd := range hs {
		if red.Header(hd.Key) {
			continue
		}
		if m.matches(string(hd.Value)) {
			hs[i].Value, redacted = []byte(Redacted), true
		} else {
			m.clear = append(m.clear, string(hd.Value))
		}
	}
	r.Headers = hs
	if d := r.DeadLetter; d != nil {
		dl := *d
		for _, f := range []*string{&dl.OriginalTopic, &dl.ConsumerGroup, &dl.ExceptionType, &dl.ExceptionCause,
			&dl.ExceptionMessage, &dl.Stacktrace, &dl.TraceID, &dl.FirstFailedAt} {
			*f = m.text(*f)
		}
		dl.MessageID = m.id(dl.MessageID)
		if dl != *d {
			redacted = true
		}
		r.DeadLetter = &dl
	}
	if redacted {
		r = sizedAsShown(r)
	}
	return r, redacted
}

// sizedAsShown gives a masked record the sizes of what it shows: masking reveals no length (a
// size filter, the records API's size would otherwise tell how long a hidden value is). A value
// masked whole is shown whole, the mark itself: it is no longer cut.
func sizedAsShown(r kafkamodel.Record) kafkamodel.Record {
	if string(r.Value) == Redacted {
		r.Truncated = false
	}
	if !r.Truncated {
		r.OriginalSize = len(r.Value)
	}
	r.Size = len(r.Key) + r.OriginalSize
	for _, h := range r.Headers {
		r.Size += len(h.Key) + len(h.Value)
	}
	return r
}

// ErrorGroup masks what an error group shows of masked content: its key when the exception
// type or cause headers are masked (GroupKey), and its sample as ErrorSample tells it. The sample
// record is not kept in what it returns. A group whose type is masked is named by its sample
// record instead ("••• redacted ••• (group of record 0:17)", GroupRef), which is not masked
// content: a resolution of the group names it so (triage.ErrorGroupRef.Of), where the mask
// alone names every masked group at once and the type itself is a guess the reader must not be
// able to check.
func (red *Rules) ErrorGroup(g kafkamodel.ErrorGroup) kafkamodel.ErrorGroup {
	red = red.current()
	if red != nil {
		typ := g.ExceptionType
		g.ExceptionType, g.ExceptionCause = red.GroupKey(g.ExceptionType, g.ExceptionCause)
		if typ != "" && g.ExceptionType != typ {
			g.ExceptionType = Redacted + fmt.Sprintf(groupRefFormat, g.SamplePartition, g.SampleOffset)
		}
		g.SampleMessage = red.ErrorSample(g)
	}
	g.Sample = nil
	return g
}

// groupRefFormat is what follows the mark in a masked group's type: its sample's partition and
// offset.
const groupRefFormat = " (group of record %d:%d)"

// GroupRef reads the record a masked error group's type names (ErrorGroup): ok is false when s
// is no such type.
func GroupRef(s string) (partition int32, offset int64, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), Redacted)
	if !ok {
		return 0, 0, false
	}
	if n, err := fmt.Sscanf(rest, groupRefFormat, &partition, &offset); err != nil || n != 2 || partition < 0 || offset < 0 ||
		fmt.Sprintf(groupRefFormat, partition, offset) != rest {
		return 0, 0, false
	}
	return partition, offset, true
}

// GroupKey is an error group's key (exception type and cause) as a reader sees it: hidden when
// the exception type or cause headers are masked. The error groups show it, and a resolution by
// type compares with it (triage.ErrorGroupRef.Shown).
func (red *Rules) GroupKey(typ, cause string) (string, string) {
	if red.current().masksExceptionType() {
		return maskNonEmpty(typ), maskNonEmpty(cause)
	}
	return typ, cause
}

// ErrorSample is an error group's sample exception message as it may be shown, quoted on the
// overview and in notifications: hidden when the exception message header is masked, or when the
// sample record's own masking hides it (a message quoting a masked payload value or header,
// which the record's page would hide). A group without its sample record keeps its sample only
// when no JSON path could have fed it.
func (red *Rules) ErrorSample(g kafkamodel.ErrorGroup) string {
	red = red.current()
	switch {
	case red == nil || g.SampleMessage == "":
	case red.masksExceptionMessage():
		return Redacted
	case g.Sample != nil:
		if r, masked := red.Record(*g.Sample); masked && r.DeadLetter != nil && r.DeadLetter.ExceptionMessage == Redacted {
			return Redacted
		}
	case len(red.paths) > 0:
		return Redacted
	}
	return g.SampleMessage
}

// StoredSample is ErrorSample for the store (the sampler's), with the rules' Digest: a sample read
// back under the same rules is shown as it was stored (Episodes). One snapshot of the rules gives
// both, so that a reload between them cannot name rules the sample was not masked by.
func (red *Rules) StoredSample(g kafkamodel.ErrorGroup) (sample, maskedBy string) {
	red = red.current()
	return red.ErrorSample(g), red.Digest()
}

// Episodes is src's error-group episodes as the overview and notifications tell them: the
// exception type and cause hidden when their headers are masked, and the sample as the sampler
// stored it, masked by its record, when the rules in force are the ones it was masked by
// (SampleMaskedBy, Digest). Stored under other rules — a reload added a JSON path whose values
// the stored text may quote, and without the record no one can tell — it is masked on read as a
// group without its record is (ErrorSample: hidden when the exception message header is masked or
// any JSON path is configured), until the sampler stores the group's next sample. Nil rules mask
// nothing.
func (red *Rules) Episodes(src EpisodeSource) EpisodeSource {
	if red == nil || src == nil {
		return src
	}
	return maskedEpisodes{red: red, src: src}
}

// EpisodeSource lists the dead-letter error groups whose episode started since a time (the
// store's, ops/health's ErrorGroups).
type EpisodeSource interface {
	ErrorGroupEpisodes(ctx context.Context, since time.Time, limit int) ([]history.ErrorGroupEpisode, error)
}

type maskedEpisodes struct {
	red *Rules
	src EpisodeSource
}

func (m maskedEpisodes) ErrorGroupEpisodes(ctx context.Context, since time.Time, limit int) ([]history.ErrorGroupEpisode, error) {
	eps, err := m.src.ErrorGroupEpisodes(ctx, since, limit)
	red := m.red.current()
	if err != nil || red == nil {
		return eps, err
	}
	for i := range eps {
		e := &eps[i]
		if red.masksExceptionType() {
			// The key names the group in the problem's key: a digest of it keeps groups apart.
			sum := sha256.Sum256([]byte(e.Key))
			e.Key = "masked-" + hex.EncodeToString(sum[:8])
			e.ExceptionType, e.ExceptionCause = maskNonEmpty(e.ExceptionType), maskNonEmpty(e.ExceptionCause)
		}
		if e.SampleMaskedBy == "" || e.SampleMaskedBy != red.digest {
			// Stored under other rules (or none): masked again by what the text alone tells.
			e.SampleMessage = red.ErrorSample(kafkamodel.ErrorGroup{SampleMessage: e.SampleMessage})
		}
	}
	return eps, nil
}

func maskNonEmpty(s string) string {
	if s == "" {
		return s
	}
	return Redacted
}
