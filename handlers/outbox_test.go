package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/outbox/pgoutbox"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/store"
	"github.com/redrive/redrive/ops/storetest"
	"github.com/redrive/redrive/views/layout"
)

// auditFixture is an outbox with one DEAD event and a store, in the same database or in two.
func auditFixture(t *testing.T, shared bool) (*Outboxes, *store.Store, string, int64) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	storeDSN := dsn
	if !shared {
		storeDSN = pgtest.NewDatabase(t)
	}
	pgtest.Exec(t, dsn, pgoutbox.SeedDDL)
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, created_at) VALUES ('e-1', 'Order', 'o-1', 'OrderCreated', 1, '{}', 'DEAD', 5, now(), now())`)
	cfg, err := configs.Parse([]byte("auth: {mode: none}\nstore: {dsn: \""+storeDSN+"\"}\noutboxes: [{name: orders, dsn: \""+dsn+"\"}]\n"),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	o, err := pgoutbox.Open(ctx, cfg.Outboxes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	st := storetest.On(t, storeDSN)
	return NewOutboxes([]OutboxService{o}, st, nil, nil), st, dsn, 1
}

func status(t *testing.T, dsn string, id int64) string {
	t.Helper()
	return pgtest.Value[string](t, dsn, `SELECT status FROM outbox_event WHERE id = $1`, id)
}

func postRequeue(h *Outboxes, ua string) (*httptest.ResponseRecorder, error) {
	return postOutboxJSON(h.APIRequeue, "/api/v1/outboxes/orders/events/requeue", `{"ids":[1],"reason":"fix\u0000 deployed \udcff"}`, ua)
}

// postOutboxJSON calls an outbox API handler for the outbox "orders" with a JSON body, as an
// operator whose browser says ua.
func postOutboxJSON(handler echo.HandlerFunc, target, body, ua string) (*httptest.ResponseRecorder, error) {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", ua)
	return asOperator(handler, req)
}

// postOutboxForm calls an outbox form handler for the outbox "orders" with form as its body, as
// an operator.
func postOutboxForm(handler echo.HandlerFunc, target string, form url.Values) (*httptest.ResponseRecorder, error) {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return asOperator(handler, req)
}

// asOperator calls an outbox handler for the outbox "orders" with req, as an operator.
func asOperator(handler echo.HandlerFunc, req *http.Request) (*httptest.ResponseRecorder, error) {
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(req, rec)
	c.SetParamNames("name")
	c.SetParamValues("orders")
	SetActor(c, access.Actor{Name: "ops-1", Role: access.Operator})
	return rec, handler(c)
}

// A requeue with a 0xFF user agent and a NUL reason is applied and audited, in the same database
// as the change or in another; with the store down it is neither.
func TestRequeueAuditBeforeEffect(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := "SeparateStore"
		if shared {
			name = "SharedDatabase"
		}
		t.Run(name, func(t *testing.T) {
			h, st, dsn, id := auditFixture(t, shared)
			if _, err := postRequeue(h, "curl/8\xff\x00"); err != nil {
				t.Fatalf("requeue: %v", err)
			}
			if s := status(t, dsn, id); s != "READY" {
				t.Fatalf("status %s, want READY", s)
			}
			entries, err := st.ListAudit(context.Background(), audit.Filter{Action: "outbox.requeue", Intents: true})
			if err != nil || len(entries) != 2 {
				t.Fatalf("audit rows %+v, %v: want the intent and its outcome", entries, err)
			}
			ok, intent := entries[0], entries[1]
			if intent.Outcome != audit.OutcomeStarted || ok.Outcome != audit.OutcomeOK || ok.Count == nil || *ok.Count != 1 ||
				ok.Detail["intent_id"] != float64(intent.ID) || strings.ContainsRune(ok.Reason, 0) {
				t.Errorf("intent %+v, outcome %+v", intent, ok)
			}
		})
	}
	t.Run("StoreDown", func(t *testing.T) {
		h, st, dsn, id := auditFixture(t, false)
		st.Close()
		_, err := postRequeue(h, "curl/8")
		if !errors.Is(err, ops.ErrUnavailable) || !strings.Contains(err.Error(), "the audit log cannot be written, so nothing was changed") {
			t.Fatalf("err %v: want a 503 saying nothing was changed", err)
		}
		if s := status(t, dsn, id); s != "DEAD" {
			t.Fatalf("status %s: the change was made without its audit row", s)
		}
	})
}

// A required reason is judged as the audit log keeps it: NULs dropped, white space and invisible
// characters around it trimmed; nothing left is a 400 and nothing is changed or audited. Its
// length is counted in characters.
func TestRequeueReasonJudgedAsAudited(t *testing.T) {
	h, st, dsn, id := auditFixture(t, true)
	requeue := func(reason string) error {
		_, err := postOutboxJSON(h.APIRequeue, "/api/v1/outboxes/orders/events/requeue", `{"ids":[1],"reason":"`+reason+`"}`, "curl/8")
		return err
	}
	for name, reason := range map[string]string{
		"NUL": `\u0000`, "NULs": `\u0000\u0000\u0000`, "Spaces": "   ", "Tabs": `\t\n `, "ZeroWidth": `\u200b\u200e`,
	} {
		t.Run(name, func(t *testing.T) {
			err := requeue(reason)
			if !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), "reason: required") {
				t.Fatalf("reason %q: %v; want a 400 saying reason: required", reason, err)
			}
		})
	}
	if s := status(t, dsn, id); s != "DEAD" {
		t.Fatalf("status %s: a refused requeue changed the event", s)
	}
	if entries, err := st.ListAudit(context.Background(), audit.Filter{Action: "outbox.requeue", Intents: true}); err != nil || len(entries) != 0 {
		t.Fatalf("a refused requeue was audited: %+v, %v", entries, err)
	}
	if err := requeue(strings.Repeat("修", maxReason+1)); !errors.Is(err, ops.ErrInvalid) || err.Error() != "reason: at most 1000 characters" {
		t.Fatalf("1001 characters: %v", err)
	}
	cjk := strings.Repeat("修", 400) // 1200 bytes
	if err := requeue("  " + cjk + `\u0000 `); err != nil {
		t.Fatalf("400 Chinese characters: %v", err)
	}
	entries, err := st.ListAudit(context.Background(), audit.Filter{Action: "outbox.requeue"})
	if err != nil || len(entries) != 1 || entries[0].Reason != cjk {
		t.Fatalf("audit %+v, %v: want one row with the reason trimmed", entries, err)
	}
	if s := status(t, dsn, id); s != "READY" {
		t.Fatalf("status %s, want READY", s)
	}
}

// The release and requeue APIs refuse an id that cannot be an event's (0, a negative, null) as the
// forms do, with nothing changed or audited; they answered 200, count 0, with an audit row.
func TestRepairsRefuseNonPositiveIDs(t *testing.T) {
	h, st, dsn, id := auditFixture(t, true)
	const want = "ids: each id must be a positive integer"
	for _, ids := range []string{"[0]", "[-1]", "[null]", "[1,0]", "[1,-9223372036854775808]"} {
		if _, err := postOutboxJSON(h.APIRequeue, "/api/v1/outboxes/orders/events/requeue", `{"ids":`+ids+`,"reason":"fixed"}`, "curl/8"); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("requeue %s: %v; want %q", ids, err, want)
		}
		if _, err := postOutboxJSON(h.APIRelease, "/api/v1/outboxes/orders/leases/release", `{"ids":`+ids+`}`, "curl/8"); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("release %s: %v; want %q", ids, err, want)
		}
	}
	if s := status(t, dsn, id); s != "DEAD" {
		t.Fatalf("status %s: a refused requeue changed the event", s)
	}
	if entries, err := st.ListAudit(context.Background(), audit.Filter{Intents: true}); err != nil || len(entries) != 0 {
		t.Fatalf("refused repairs were audited: %+v, %v", entries, err)
	}
}

// An event id past int64 is said to be too large, in the path and in a form, rather than not a
// positive integer.
func TestEventIDTooLarge(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	for raw, want := range map[string]string{
		"9223372036854775808":  "id: 9223372036854775808 is too large for an event id (at most 9223372036854775807)",
		"99999999999999999999": "id: 99999999999999999999 is too large for an event id (at most 9223372036854775807)",
		"0":                    `id: "0" is not an event id (a positive integer)`,
		"-1":                   `id: "-1" is not an event id (a positive integer)`,
		"-9223372036854775809": `id: "-9223372036854775809" is not an event id (a positive integer)`,
		"1e3":                  `id: "1e3" is not an event id (a positive integer)`,
	} {
		if _, err := callAPI(t, h.APIEvent, "/api/v1/outboxes/orders/events/"+raw, []string{"name", "id"}, "orders", raw); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("GET …/events/%s: %v; want %q", raw, err, want)
		}
		form := url.Values{"id": {raw}, "reason": {"fixed"}}
		if _, err := postOutboxForm(h.FormRequeue, "/outboxes/orders/requeue", form); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
			t.Errorf("form id=%s: %v; want %q", raw, err, want)
		}
	}
}

// stuck=true lists PROCESSING events with an expired lease: with status=DEAD the list and the page
// answer a 400 saying so (the list used to ignore the status, and the page kept DEAD selected);
// with status=PROCESSING they agree.
func TestStuckWithAnotherStatusIsRefused(t *testing.T) {
	h, _, dsn, _ := auditFixture(t, true)
	h.meta = func(echo.Context, string, string) layout.Meta { return layout.Meta{} }
	pgtest.Exec(t, dsn, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version, payload,
		status, attempts, available_at, locked_until, created_at) VALUES ('e-2', 'Order', 'o-2', 'OrderCreated', 1, '{}', 'PROCESSING', 1,
		now(), now() - interval '1 minute', now())`)
	const want = "status: stuck=true lists PROCESSING events with an expired lease; it cannot be combined with status=DEAD"
	for _, handler := range []echo.HandlerFunc{h.APIEvents, h.Show} {
		for _, q := range []string{"stuck=true&status=DEAD", "status=dead&stuck=1"} {
			if _, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+q, nil)); !errors.Is(err, ops.ErrInvalid) || err.Error() != want {
				t.Errorf("?%s: %v; want %q", q, err, want)
			}
		}
		for _, q := range []string{"stuck=true&status=PROCESSING", "stuck=true", "status=DEAD&stuck=false"} {
			if rec, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+q, nil)); err != nil || rec.Code != http.StatusOK {
				t.Errorf("?%s: %d, %v", q, rec.Code, err)
			}
		}
	}
}

// A value the outbox pages refuse is quoted back cut to 64 bytes, "…" marking the cut: a 100 KB
// status was a 100 KB answer.
func TestOutboxEchoesAtMost64Bytes(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	h.meta = func(echo.Context, string, string) layout.Meta { return layout.Meta{} }
	long := strings.Repeat("a", 100_000)
	wantStatus := `status: "` + strings.Repeat("a", 64) + `…" is not one of READY, PROCESSING, SENT, FAILED, DEAD`
	for _, handler := range []echo.HandlerFunc{h.APIEvents, h.Show} {
		if _, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?status="+long, nil)); err == nil || err.Error() != wantStatus {
			t.Errorf("a long status: %.200v", err)
		}
		for _, name := range []string{"created_from", "created_to"} {
			_, err := asOperator(handler, httptest.NewRequest(http.MethodGet, "/outboxes/orders?"+name+"="+strings.Repeat("0", 1000)+"1h", nil))
			if !errors.Is(err, ops.ErrInvalid) || err.Error() != name+": must be at most 64 characters" {
				t.Errorf("a long %s: %.200v", name, err)
			}
		}
	}
	form := url.Values{"id": {"1", long}, "reason": {"x"}}
	if _, err := postOutboxForm(h.FormRequeue, "/outboxes/orders/requeue", form); err == nil || err.Error() != `id: "`+strings.Repeat("a", 64)+`…" is not an event id (a positive integer)` {
		t.Errorf("a long form id: %.200v", err)
	}
}

// After a form action the console goes back to the page the form was on only when that is one of
// the outbox's own pages, with dot segments resolved as a browser resolves them: ../ and its
// escaped forms cannot climb out.
func TestFormActionReturnsOnlyToTheOutboxPages(t *testing.T) {
	h, _, _, _ := auditFixture(t, true)
	back := "/outboxes/orders"
	for ret, want := range map[string]string{
		"":                                                     back,
		"/outboxes/orders?status=DEAD":                         "/outboxes/orders?status=DEAD",
		"/outboxes/orders/events/1":                            "/outboxes/orders/events/1",
		"/outboxes/orders/../../admin":                         back,
		"/outboxes/orders/../payments":                         back,
		"/outboxes/orders/./events/1":                          back,
		"/outboxes/orders/%2F..%2F..%2Fadmin":                  back,
		"/outboxes/orders/..%2F..%2Fadmin":                     back,
		"/outboxes/orders/%2E%2E/%2E%2E/admin":                 back,
		"/outboxes/orders%2F..%2Fpayments":                     back,
		"/outboxes/orders//..//..//admin":                      back,
		"/outboxes/orders-archive":                             back,
		"//evil.example/outboxes/orders":                       back,
		"https://evil.example/outboxes/orders":                 back,
		"/outboxes/orders/events/1/../../../../admin?status=x": back,
	} {
		form := url.Values{"all_stuck": {"1"}, "return": {ret}}
		rec, err := postOutboxForm(h.FormRelease, "/outboxes/orders/release", form)
		if err != nil {
			t.Fatalf("return=%s: %v", ret, err)
		}
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != want {
			t.Errorf("return=%s: %d to %s, want %s", ret, rec.Code, got, want)
		}
	}
}

func FuzzCapText(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("日本語テキスト", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > len(s)+4 || !utf8.ValidString(s) {
			return
		}
		got, cut := capText(s, n)
		if len(got) > n || cut != (len(s) > n) || !utf8.ValidString(got) || !strings.HasPrefix(s, got) {
			t.Fatalf("capText(%q, %d) = %q, %v", s, n, got, cut)
		}
	})
}
