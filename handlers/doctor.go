package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/doctor"
	doctorpages "github.com/redrive/redrive/views/pages/doctor"
)

// DoctorRunner checks every configured dependency without changing anything (ops/doctor).
type DoctorRunner interface {
	Run(ctx context.Context) doctor.Report
}

// Doctor serves the /doctor page and its JSON form, for admins.
type Doctor struct {
	doctor DoctorRunner // nil answers 404
	meta   MetaFunc
}

// NewDoctor wires the doctor of the running config; d may be nil.
func NewDoctor(d DoctorRunner, meta MetaFunc) *Doctor { return &Doctor{doctor: d, meta: meta} }

func (h *Doctor) report(c echo.Context) (doctor.Report, error) {
	var d DoctorRunner
	if h != nil {
		d = h.doctor
	}
	if d == nil {
		return doctor.Report{}, ops.NotFound("the doctor is not configured")
	}
	return d.Run(c.Request().Context()), nil
}

// Page runs the checks and renders one row per check.
func (h *Doctor) Page(c echo.Context) error {
	rep, err := h.report(c)
	if err != nil {
		return err
	}
	p := doctorpages.Page{Meta: h.meta(c, "Doctor", "doctor"), OK: rep.OK, Warnings: rep.Warnings, Failed: rep.Failed,
		Took: rep.Took.Round(time.Millisecond).String()}
	for _, ch := range rep.Checks {
		p.Rows = append(p.Rows, doctorpages.Row{Status: string(ch.Status), Target: ch.Target, Check: ch.Name, Detail: ch.Detail, Fix: ch.Fix})
	}
	return render(c, http.StatusOK, doctorpages.Show(p))
}

// API runs the checks and answers the report as JSON (what `console doctor --json` prints).
func (h *Doctor) API(c echo.Context) error {
	rep, err := h.report(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rep)
}
