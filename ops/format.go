package ops

import (
	"strconv"
	"strings"
	"time"
)

// How a number and an age read wherever a person reads them: on the pages (views/components) and in
// the titles of problems the overview and notifications show (ops/health). One writing, so that a
// title and the page it links to say the same number the same way.

// FormatNum formats n with comma thousands separators: 1234567 → "1,234,567".
func FormatNum(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
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

// FormatAge formats a duration as its two largest units, for example
// "45 s", "3 min 12 s", "2 h 5 min", "3 d 4 h". A zero second unit is
// dropped ("3 min"), durations under a second are shown in ms, and a negative
// duration gets a leading "-".
func FormatAge(d time.Duration) string {
	if d < 0 {
		if d == time.Duration(-1<<63) {
			d++ // -MinInt64 overflows
		}
		return "-" + FormatAge(-d)
	}
	if d == 0 {
		return "0 s"
	}
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	type unit struct {
		size time.Duration
		name string
	}
	units := []unit{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}}
	for i, u := range units {
		if d < u.size {
			continue
		}
		out := strconv.FormatInt(int64(d/u.size), 10) + " " + u.name
		if i+1 < len(units) {
			next := units[i+1]
			if r := (d % u.size) / next.size; r > 0 {
				out += " " + strconv.FormatInt(int64(r), 10) + " " + next.name
			}
		}
		return out
	}
	return "0 s" // unreachable: d >= 1 s matches the last unit
}

// Plural is n (as FormatNum writes it) and word, in the plural unless n is 1: "1 member",
// "3 members", "1,204 records". Words whose plural is not an added s are written out by the caller.
func Plural(n int64, word string) string { return FormatNum(n) + " " + PluralWord(n, word) }

// PluralWord is word in the plural unless n is 1, for a count written elsewhere ("on partitions
// 1, 2" but "on partition 0").
func PluralWord(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
