package components

import "strings"

func joinComma(s []string) string { return strings.Join(s, ",") }
