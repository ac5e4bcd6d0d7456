package configs

import (
	"fmt"

	"github.com/redrive/redrive/ops/jsonpath"
)

func (r *MessageIDRules) validate(bad func(key, format string, args ...any)) {
	for i, p := range r.JSONPaths {
		if _, _, err := jsonpath.ParseMessageID(p); err != nil {
			bad(fmt.Sprintf("message_id.json_paths[%d]", i), "%v", err)
		}
	}
}

// Warnings are what the configuration still accepts but should be written otherwise; the console
// logs them at start.
func (c *Config) Warnings() []string {
	var out []string
	for i, p := range c.MessageID.JSONPaths {
		if path, bare, err := jsonpath.ParseMessageID(p); err == nil && bare {
			out = append(out, fmt.Sprintf("message_id.json_paths[%d]: %q is the old form of a path, still read as before; "+
				"write it %q, the grammar redaction.json_paths use", i, p, path.String()))
		}
	}
	return out
}
