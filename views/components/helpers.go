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
