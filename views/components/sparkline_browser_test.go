package components_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/chromedp/chromedp"

	c "github.com/redrive/redrive/views/components"
	"github.com/redrive/redrive/views/layout"
	"github.com/redrive/redrive/views/pages/overview"
)

// canvasLine is what a chart's canvas shows of its first series, read from its pixels.
type canvasLine struct {
	Height    string  `json:"height"`    // the chart's data-height
	Width     int     `json:"width"`     // canvas pixels
	Rows      int     `json:"rows"`      // canvas pixels
	FirstX    int     `json:"firstX"`    // leftmost column with line pixels, -1 for none
	LastX     int     `json:"lastX"`     // rightmost
	FirstY    float64 `json:"firstY"`    // mean row of the line's pixels in FirstX (0 is the top)
	LastY     float64 `json:"lastY"`     // in LastX
	Other     int     `json:"other"`     // opaque pixels not of the line's colour: axes, grid, labels
	MaxBand   int     `json:"maxBand"`   // tallest run of line pixels in one column
	Legend    int     `json:"legend"`    // .u-legend elements
	Text      string  `json:"text"`      // the chart's visible text
	Cursor    int     `json:"cursor"`    // cursor and selection elements
	AriaLabel string  `json:"ariaLabel"` // the chart's accessible name
}

// readLines reads every chart matched by selector. The line is the first palette colour, #1f5fd1.
const readLines = `((sel) => Array.from(document.querySelectorAll(sel)).map(el => {
	const cv = el.querySelector("canvas");
	const w = cv.width, h = cv.height;
	const d = cv.getContext("2d").getImageData(0, 0, w, h).data;
	const isLine = i => d[i+3] > 40 && Math.abs(d[i]-31) < 50 && Math.abs(d[i+1]-95) < 50 && Math.abs(d[i+2]-209) < 50;
	const col = x => { const ys = []; for (let y = 0; y < h; y++) if (isLine((y*w+x)*4)) ys.push(y); return ys; };
	let other = 0, maxBand = 0, firstX = -1, lastX = -1;
	for (let x = 0; x < w; x++) {
		const ys = col(x);
		if (ys.length) { if (firstX < 0) firstX = x; lastX = x; maxBand = Math.max(maxBand, ys[ys.length-1] - ys[0] + 1); }
		for (let y = 0; y < h; y++) { const i = (y*w+x)*4; if (d[i+3] > 128 && !isLine(i)) other++; }
	}
	const mean = ys => ys.length ? ys.reduce((s, v) => s + v, 0) / ys.length : -1;
	return {height: el.getAttribute("data-height") || "", width: w, rows: h, firstX, lastX,
		firstY: firstX < 0 ? -1 : mean(col(firstX)), lastY: lastX < 0 ? -1 : mean(col(lastX)),
		other, maxBand, legend: el.querySelectorAll(".u-legend").length, text: el.innerText.trim(),
		cursor: el.querySelectorAll(".u-cursor-x, .u-cursor-y, .u-cursor-pt, .u-select").length,
		ariaLabel: el.getAttribute("aria-label") || ""};
}))`

// risingPoints is 1, 2, …, 10 lag over ten minutes.
func risingPoints(now time.Time) []byte {
	var ps []map[string]any
	for i := range 10 {
		ps = append(ps, map[string]any{"at": now.Add(time.Duration(i-9) * time.Minute).UTC().Format(time.RFC3339), "total_lag": i + 1})
	}
	b, _ := json.Marshal(map[string]any{"points": ps})
	return b
}

// The overview's lag sparkline of a rising series ends higher on its canvas than it starts, at
// 48 px and at other sizes, and shows nothing but the line: no axes, grid, legend or cursor. The
// same series in a full chart squeezed to 48 px rises too.
func TestSparkline(t *testing.T) {
	now := time.Now()
	body := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if err := overview.Body(overview.Data{CheckedAt: now, Problems: []overview.Problem{
			{Severity: "warning", Title: "main/billing is WARN (total lag 10): lag rose at every sample on partition 0: 1 → 2 → … → 9 → 10 over 9m", Link: "/kafka/main/groups/billing", Trend: "/rising.json"},
		}}).Render(ctx, w); err != nil {
			return err
		}
		for _, h := range []int{16, 24, 120, 300} {
			if err := c.Chart(c.ChartProps{Src: "/rising.json", Series: []string{"total_lag"}, Labels: []string{"lag"}, Height: h, Sparkline: true}).Render(ctx, w); err != nil {
				return err
			}
		}
		return c.Chart(c.ChartProps{Src: "/rising.json", Series: []string{"total_lag"}, Height: 48}).Render(ctx, w)
	})
	page := renderTo(t, layout.Page(layout.Meta{Title: "Overview", Section: "overview"}), body)
	mux := http.NewServeMux()
	mux.HandleFunc("/rising.json", serveJSON(risingPoints(now)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	srv := serveUnderCSP(t, mux)

	b := newBrowser(t)
	b.do(chromedp.Navigate(srv.URL + "/"))
	b.wait(`document.querySelectorAll("[data-chart] canvas").length === 6`)

	check := func(t *testing.T, l canvasLine) {
		t.Helper()
		t.Logf("%d×%d canvas: line from column %d (y %.1f) to column %d (y %.1f)", l.Width, l.Rows, l.FirstX, l.FirstY, l.LastX, l.LastY)
		if l.FirstX < 0 || l.LastX-l.FirstX < l.Width/2 {
			t.Fatalf("%+v: no line across the canvas", l)
		}
		// Rows grow downwards: a line that rises ends at a smaller y.
		if !(l.LastY < l.FirstY-float64(l.Rows)/4) {
			t.Errorf("%+v: a rising series starts at y %.1f and ends at y %.1f of %d rows, want it to end clearly higher", l, l.FirstY, l.LastY, l.Rows)
		}
	}
	sparks := eval[[]canvasLine](b, readLines+`("[data-chart][data-sparkline]")`)
	if len(sparks) != 5 {
		t.Fatalf("%d sparklines, want 5", len(sparks))
	}
	for _, l := range sparks {
		t.Run("Sparkline"+l.Height+"px", func(t *testing.T) {
			check(t, l)
			want, _ := strconv.Atoi(l.Height)
			if l.Rows != want { // devicePixelRatio is 1 in headless chromium
				t.Errorf("canvas is %d rows, want the whole %d px for the line", l.Rows, want)
			}
			if l.Other != 0 {
				t.Errorf("%d opaque pixels that are not the line (axes, grid, labels)", l.Other)
			}
			// Without axes every column holds only the line: at most the stroke and its slope.
			if l.MaxBand > 6 {
				t.Errorf("a column holds %d rows of line colour, want only the stroke", l.MaxBand)
			}
			if l.Legend != 0 || l.Cursor != 0 || l.Text != "" {
				t.Errorf("legend %d, cursor %d, text %q; want none", l.Legend, l.Cursor, l.Text)
			}
			if l.AriaLabel == "" {
				t.Error("no accessible name")
			}
		})
	}
	if n := eval[int](b, `document.querySelectorAll('td.sparkline [data-chart][data-sparkline] canvas').length`); n != 1 {
		t.Errorf("the overview row has %d sparkline canvases, want 1", n)
	}
	if got := eval[string](b, `document.querySelector('[data-testid="problems"]').innerText`); strings.Contains(got, "Time") || strings.Contains(got, "--") {
		t.Errorf("the problems panel shows chart chrome: %q", got)
	}
	t.Run("FullChartSmall", func(t *testing.T) {
		full := eval[[]canvasLine](b, readLines+`("[data-chart]:not([data-sparkline])")`)
		if len(full) != 1 {
			t.Fatalf("%d full charts, want 1", len(full))
		}
		check(t, full[0])
	})

	time.Sleep(200 * time.Millisecond)
	for _, p := range b.problems() {
		t.Errorf("console: %s", p)
	}
}
