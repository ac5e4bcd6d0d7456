package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
)

// notifyFixture is the notifications handlers over a store of their own; dsn is the store's.
func notifyFixture(t *testing.T) (*Notifications, *store.Store, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	st := storetest.On(t, dsn)
	return NewNotifications(st, nil, nil), st, dsn
}

// asOperatorOn calls handler as an operator with method, target, a JSON body (when not "") and
// the path parameter id (when not "").
func asOperatorOn(handler echo.HandlerFunc, method, target, body, id string) (*httptest.ResponseRecorder, error) {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(req, rec)
	if id != "" {
		c.SetParamNames("id")
		c.SetParamValues(id)
	}
	SetActor(c, access.Actor{Name: "ops-1", Role: access.Operator})
	return rec, handler(c)
}

// A silence that could never match, could not be stored, or would not say what it keeps is a 400
// naming the field, and nothing is written: no silence, no audit row (the QA's NUL byte was a 503
// whose audit row carried PostgreSQL's text).
func TestSilenceRefusesBadInput(t *testing.T) {
	h, _, dsn := notifyFixture(t)
	long := strings.Repeat("é", 1001)
	for _, tc := range []struct{ name, body, want string }{
		{"NULInMatcher", `{"matchers":{"kind":"kafka_group","group":"a\u0000b"},"duration":"1h"}`, "matchers.group: must not contain NUL bytes"},
		{"NULInComment", `{"matchers":{"kind":"kafka_group"},"duration":"1h","comment":"a\u0000b"}`, "comment: must not contain NUL bytes"},
		{"UnknownKind", `{"matchers":{"kind":"nonsense_kind"},"duration":"1h"}`, `matchers.kind: "nonsense_kind" is not a problem kind; one of kafka_group, dead_letters`},
		{"KindInCapitals", `{"matchers":{"kind":"KAFKA_GROUP"},"duration":"1h"}`, `matchers.kind: "KAFKA_GROUP" is not a problem kind`},
		{"UnknownSeverity", `{"matchers":{"severity":"high"},"duration":"1h"}`, "matchers.severity: \"high\" is not a problem severity; one of critical, warning, info"},
		{"UnknownKey", `{"matchers":{"colour":"red"},"duration":"1h"}`, "matchers.colour: unknown"},
		{"NanosecondLong", `{"matchers":{"kind":"kafka_group"},"duration":"1ns"}`, "duration: must end between 1m and 30d from now"},
		{"ThirtyOneDays", `{"matchers":{"kind":"kafka_group"},"duration":"31d"}`, "duration: must end between 1m and 30d from now"},
		{"EndsInThePast", `{"matchers":{"kind":"kafka_group"},"ends_at":"2001-01-01T00:00:00Z"}`, "ends_at: must end between 1m and 30d from now"},
		{"EndsAtInWords", `{"matchers":{"kind":"outbox_dead"},"ends_at":"tomorrow"}`, "ends_at: must be RFC 3339"},
		{"NotADuration", `{"matchers":{"kind":"kafka_group"},"duration":"soon"}`, "duration: must be a duration such as 30m, 2h or 7d"},
		{"LongComment", `{"matchers":{"kind":"kafka_group"},"duration":"1h","comment":"` + long + `"}`, "comment: must be at most 1000 characters (it has 1001)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := asOperatorOn(h.APISilence, http.MethodPost, "/api/v1/silences", tc.body, "")
			if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(ops.Message(err), tc.want) {
				t.Fatalf("%v; want a 400 with %q", err, tc.want)
			}
		})
	}
	if n := pgtest.Value[int64](t, dsn, `SELECT count(*) FROM redrive.notify_silence`); n != 0 {
		t.Errorf("%d silences stored", n)
	}
	if n := pgtest.Value[int64](t, dsn, `SELECT count(*) FROM redrive.audit_log`); n != 0 {
		t.Errorf("%d audit rows written for refused silences", n)
	}
}

// A silence is set for days in the age grammar of the time filters, its comment is answered as
// stored, and one ends it early: gone from the list, audited, ending it again changes nothing,
// and an unknown one is a 404.
func TestSilenceForDaysAndEndedEarly(t *testing.T) {
	h, st, dsn := notifyFixture(t)
	comment := strings.Repeat("x", 1000)
	rec, err := asOperatorOn(h.APISilence, http.MethodPost, "/api/v1/silences",
		`{"matchers":{"kind":"kafka_group","cluster":"main"},"duration":"7d","comment":"`+comment+`"}`, "")
	if err != nil {
		t.Fatal(err)
	}
	var created silenceJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
		t.Fatal(err)
	}
	if d := time.Until(created.EndsAt); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour {
		t.Errorf("ends in %s; want 7 days", d)
	}
	if got := pgtest.Value[string](t, dsn, `SELECT comment FROM redrive.notify_silence WHERE id = $1`, created.ID); got != created.Comment || got != comment {
		t.Errorf("stored comment %d characters, answered %d", len(got), len(created.Comment))
	}

	id := strconv.FormatInt(created.ID, 10)
	rec, err = asOperatorOn(h.APIEndSilence, http.MethodDelete, "/api/v1/silences/"+id, "", id)
	if err != nil {
		t.Fatal(err)
	}
	var ended silenceJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &ended); err != nil || time.Since(ended.EndsAt) < 0 || time.Since(ended.EndsAt) > time.Minute {
		t.Fatalf("ended: %v %s", err, rec.Body)
	}
	list, err := st.Silences(context.Background())
	if err != nil || len(list) != 0 {
		t.Fatalf("silences in force after the end: %v %v", list, err)
	}
	rec, err = asOperatorOn(h.APIEndSilence, http.MethodDelete, "/api/v1/silences/"+id, "", id)
	var again silenceJSON
	if err != nil || json.Unmarshal(rec.Body.Bytes(), &again) != nil || !again.EndsAt.Equal(ended.EndsAt) {
		t.Fatalf("ending it again: %v %s; want it as it was (%s)", err, rec.Body, ended.EndsAt)
	}
	entries, err := st.ListAudit(context.Background(), audit.Filter{Action: "notify.silence_end"})
	if err != nil || len(entries) != 2 || entries[0].Target != "silence/"+id || entries[0].Outcome != audit.OutcomeOK ||
		entries[0].Detail["already_ended"] != true || entries[1].Detail["already_ended"] != false || entries[1].Actor != "ops-1" {
		t.Fatalf("audit: %v %+v", err, entries)
	}

	for _, unknown := range []string{"999", "abc"} {
		if _, err := asOperatorOn(h.APIEndSilence, http.MethodDelete, "/api/v1/silences/"+unknown, "", unknown); !errors.Is(err, ops.ErrNotFound) {
			t.Errorf("silence %s: %v; want a 404", unknown, err)
		}
	}
	if n := pgtest.Value[int64](t, dsn, `SELECT count(*) FROM redrive.audit_log WHERE action = 'notify.silence_end'`); n != 4 {
		t.Errorf("%d notify.silence_end rows; want two intents and two outcomes, none for the unknown ones", n)
	}
}
