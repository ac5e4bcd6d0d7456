// Package viewtest renders templ components for the views' tests: the parsed document to query,
// and the HTML as written, so that escaping can be checked on the bytes, not only on the tree.
package viewtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// Render renders c and parses what it wrote; a failure of either ends the test.
func Render(tb testing.TB, c templ.Component) (*goquery.Document, string) {
	tb.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		tb.Fatalf("render: %v", err)
	}
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		tb.Fatalf("parse: %v", err)
	}
	return doc, html
}
