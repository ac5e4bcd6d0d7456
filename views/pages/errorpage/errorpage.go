// Package errorpage renders what the central HTTP error handler shows a
// person: a full page for a normal request, a panel-sized fragment for htmx.
package errorpage

import (
	"net/http"
	"regexp"
	"strconv"

	"github.com/redrive/redrive/paths"

	"github.com/redrive/redrive/views/layout"
)

// heading is title, or the standard status text when title is empty.
func heading(status int, title string) string {
	if title != "" {
		return title
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(status)
}

// explanation is message, or a short default for the status class when
// message is empty.
func explanation(status int, message string) string {
	switch {
	case message != "":
		return message
	case status == http.StatusNotFound:
		return "There is nothing at this address. The object may have been replayed, purged or renamed, or the link is wrong."
	case status == http.StatusUnauthorized:
		return "You need to sign in to see this page."
	case status == http.StatusForbidden:
		return "You are not allowed to do this. If you think you should be, ask an administrator."
	case status >= 500:
		return "Something went wrong on the console's side. The error was logged with the request ID below."
	case status >= 400:
		return "The request could not be handled. Check the input and try again."
	default:
		return ""
	}
}

// meta returns m with a title for the browser tab when the handler left it empty.
func meta(m layout.Meta, status int, title string) layout.Meta {
	if m.Title == "" {
		m.Title = heading(status, title)
	}
	return m
}

// namedID is an id a message may name that has a page: a replay job's or a plan's.
var namedID = regexp.MustCompile(`\b(job|plan)_[0-9a-f]{16}\b`)

// messagePart is a piece of an error's message: text, and the page it names when Href is set.
type messagePart struct{ Text, Href string }

// messageParts splits msg so that what it names is a link (a 409 naming the running job links
// it), the rest text.
func messageParts(msg string) []messagePart {
	var out []messagePart
	last := 0
	for _, m := range namedID.FindAllStringSubmatchIndex(msg, -1) {
		if m[0] > last {
			out = append(out, messagePart{Text: msg[last:m[0]]})
		}
		id := msg[m[0]:m[1]]
		href := paths.Replay(id)
		if msg[m[2]:m[3]] == "plan" {
			href = paths.ReplayPlan(id)
		}
		out = append(out, messagePart{Text: id, Href: href})
		last = m[1]
	}
	if last < len(msg) {
		out = append(out, messagePart{Text: msg[last:]})
	}
	return out
}
