package triage

import (
	"strings"
	"testing"
)

// The reason limit counts characters, as its message says: 400 CJK characters (1,200 bytes) pass,
// 1,001 characters of any width do not.
func TestCheckStateCountsCharacters(t *testing.T) {
	if err := checkState(StateResolved, strings.Repeat("原", 400)); err != nil {
		t.Fatalf("400 CJK characters: %v", err)
	}
	if err := checkState(StateResolved, strings.Repeat("原", 1000)); err != nil {
		t.Fatalf("1,000 CJK characters: %v", err)
	}
	if err := checkState(StateResolved, strings.Repeat("a", 1001)); err == nil {
		t.Fatal("1,001 characters passed")
	}
}
