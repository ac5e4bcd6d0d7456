package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/ops/audit"
	"github.com/redrive/redrive/ops/triage"
)

// postOutboxJSON calls an outbox API handler for the outbox "orders" with a JSON body, as an
// operator whose browser says ua.
func postOutboxJSON(handler echo.HandlerFunc, target, body, ua string) (*httptest.ResponseRecorder, error) {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", ua)
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

// Every other action that needs a reason judges it with requiredReason too.
func TestRequiredReasonEverywhere(t *testing.T) {
	blank := "\x00 \u200b"
	ctx := func() echo.Context {
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), httptest.NewRecorder())
		c.SetParamNames("id")
		c.SetParamValues("7")
		SetActor(c, access.Actor{Name: "root", Role: access.Admin})
		return c
	}
	restore := func(reason string) error {
		_, _, err := restoreInput(ctx(), func() (restoreRequest, error) { return restoreRequest{To: "dlq", Reason: reason}, nil })
		return err
	}
	resolve := func(reason string) error {
		_, err := resolutionInput(triage.StateIgnored, reason, "events")
		return err
	}
	offsetsApply := func(reason string) error {
		_, err := (&Offsets{}).apply(ctx(), offsetApplyRequest{PlanID: "plan_1", Reason: reason})
		return err
	}
	forcedReplay := func(reason string) error {
		_, err := (&Replays{}).start(ctx(), startRequest{PlanID: "plan_1", Force: true, Reason: reason})
		return err
	}
	for name, act := range map[string]func(string) error{
		"ArchiveRestore": restore, "Resolution": resolve, "OffsetsApply": offsetsApply, "ForcedReplay": forcedReplay,
	} {
		t.Run(name, func(t *testing.T) {
			if err := act(blank); !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(err.Error(), "reason: required") {
				t.Errorf("a reason of a NUL and spaces: %v; want reason: required", err)
			}
			if err := act(strings.Repeat("因", maxReason+1)); !errors.Is(err, ops.ErrInvalid) || err.Error() != "reason: at most 1000 characters" {
				t.Errorf("1001 characters: %v", err)
			}
		})
	}
	if err := restore(strings.Repeat("因", 400)); err != nil {
		t.Errorf("a restore with 400 Chinese characters: %v", err)
	}
	if reason, err := resolutionInput(triage.StateOpen, blank, "events"); err != nil || reason != "" {
		t.Errorf("opening again needs no reason: %q, %v", reason, err)
	}
}
