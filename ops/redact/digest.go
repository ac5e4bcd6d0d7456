package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Digest names the rules in force: the same headers and JSON paths, in any order and case of
// the headers, give the same digest; "" for no rules. What was masked and stored under one set
// of rules (an error group's sample) is known to need nothing more while the digest is the same.
func (r *Rules) Digest() string {
	if r = r.current(); r == nil {
		return ""
	}
	return r.digest
}

func digestOf(headers, jsonPaths []string) string {
	var hs []string
	for _, h := range headers {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	ps := slices.Clone(jsonPaths)
	slices.Sort(ps)
	if len(hs) == 0 && len(ps) == 0 {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(hs, "\x00") + "\x01" + strings.Join(ps, "\x00")))
	return hex.EncodeToString(sum[:12])
}
