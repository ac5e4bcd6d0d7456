package health

import (
	"strconv"
	"strings"
	"time"
)

// The titles are read by people on the overview and in notifications, so numbers and ages are
// written the way the pages write them (views/components.FormatNum, FormatAge); ops
// imports no template package, hence these copies. format_test.go keeps them in step.

func formatNum(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteByte(',')
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

func formatAge(d time.Duration) string {
	if d < 0 {
		if d == time.Duration(-1<<63) {
			d++
		}
		return "-" + formatAge(-d)
	}
	if d == 0 {
		return "0 s"
	}
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}}
	for i, u := range units {
		if d < u.size {
			continue
		}
		out := strconv.FormatInt(int64(d/u.size), 10) + " " + u.name
		if i+1 < len(units) {
			if r := (d % u.size) / units[i+1].size; r > 0 {
				out += " " + strconv.FormatInt(int64(r), 10) + " " + units[i+1].name
			}
		}
		return out
	}
	return "0 s"
}
