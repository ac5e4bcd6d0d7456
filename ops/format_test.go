package ops

import (
	"math"
	"testing"
	"time"
)

func TestFormatNum(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{1000, "1,000"},
		{12345, "12,345"},
		{123456, "123,456"},
		{1234567, "1,234,567"},
		{-1, "-1"},
		{-999, "-999"},
		{-1000, "-1,000"},
		{-1234567, "-1,234,567"},
		{math.MaxInt64, "9,223,372,036,854,775,807"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		if got := FormatNum(tt.in); got != tt.want {
			t.Errorf("FormatNum(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0 s"},
		{850 * time.Millisecond, "850 ms"},
		{time.Second, "1 s"},
		{45 * time.Second, "45 s"},
		{45*time.Second + 900*time.Millisecond, "45 s"},
		{3 * time.Minute, "3 min"},
		{3*time.Minute + 12*time.Second, "3 min 12 s"},
		{2*time.Hour + 5*time.Minute + 59*time.Second, "2 h 5 min"},
		{2*time.Hour + 30*time.Second, "2 h"},
		{3*24*time.Hour + 4*time.Hour + 10*time.Minute, "3 d 4 h"},
		{400 * 24 * time.Hour, "400 d"},
		{-90 * time.Second, "-1 min 30 s"},
		{math.MinInt64, "-106751 d 23 h"},
	}
	for _, tt := range tests {
		if got := FormatAge(tt.in); got != tt.want {
			t.Errorf("FormatAge(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n         int64
		got, want string
	}{
		{1, Plural(1, "member"), "1 member"},
		{0, Plural(0, "member"), "0 members"},
		{1204, Plural(1204, "record"), "1,204 records"},
		{1, PluralWord(1, "partition"), "partition"},
		{2, PluralWord(2, "partition"), "partitions"},
	} {
		if tc.got != tc.want {
			t.Errorf("%d: %q, want %q", tc.n, tc.got, tc.want)
		}
	}
}
