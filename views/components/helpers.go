package components

import (
	"context"
	"io"
	"strings"

	"github.com/a-h/templ"
)

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

// Breakable writes s with a line-break opportunity (<wbr>) after each '.', '_', '$' and '/', so
// that a class name, an action name or a path breaks between its parts, never mid-word
// (skip_already_replayed, org.springframework.kafka.listener.ListenerExecutionFailedException).
// Written without white space between the parts: its text is s.
func Breakable(s string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		for i, part := range breakParts(s) {
			if i > 0 {
				if _, err := io.WriteString(w, "<wbr>"); err != nil {
					return err
				}
			}
			if _, err := io.WriteString(w, templ.EscapeString(part)); err != nil {
				return err
			}
		}
		return nil
	})
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
