package components

import "strings"

// oobTargets is the hx-select-oob value for element ids: "#a,#b".
func oobTargets(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "#" + id
	}
	return strings.Join(out, ",")
}
