package components

import "strings"

func joinComma(s []string) string { return strings.Join(s, ",") }

// sparklineLabel is a sparkline's accessible name: its labels, or its series keys.
func sparklineLabel(p ChartProps) string {
	names := make([]string, len(p.Series))
	for i, k := range p.Series {
		names[i] = k
		if i < len(p.Labels) && p.Labels[i] != "" {
			names[i] = p.Labels[i]
		}
	}
	return strings.Join(names, ", ")
}

// breakParts splits s after each '.', '_', '$' and '/' (Breakable's break opportunities).
func breakParts(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '_', '$', '/':
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) || len(out) == 0 {
		out = append(out, s[start:])
	}
	return out
}
