// Package layout holds the page frame every HTML page of the console renders
// inside: head and assets, top navigation, banners and breadcrumbs.
package layout

import (
	"encoding/json"

	"github.com/redrive/redrive/paths"
)

// Meta is what a page tells the layout about itself and the request.
type Meta struct {
	// Title is the page title, shown in the browser tab as "Title · Redrive";
	// "" shows just "Redrive".
	Title string
	// Section highlights the matching top-navigation item: "overview",
	// "outboxes", "kafka", "rabbitmq", "replays" or "audit"; "" highlights none.
	Section string
	// CSRFToken is sent by htmx as the X-CSRF-Token header on every request
	// (and belongs in each form's components.CSRFField); "" sends no header.
	CSRFToken string
	// AuthNone shows a red banner warning that authentication is off.
	AuthNone bool
	// ReadOnly shows a grey "Read-only mode" banner.
	ReadOnly bool
	// Version is the console's build version shown in the top bar; "" hides it.
	Version string
	// User is the signed-in user shown in the top bar with a sign-out button; "" shows neither
	// (auth.mode none).
	User string
	// Role is the signed-in user's role (viewer, operator, admin), shown beside User.
	Role string
	// CanOperate is true when the user may act (operator or admin) and the console is not
	// read-only: pages show their action buttons only then.
	CanOperate bool
	// CanAdmin is true when the user has the admin role (the Doctor page's).
	CanAdmin bool
	// Breadcrumbs are rendered above the page content; the last crumb, or any
	// with an empty Href, is plain text. Nil renders no breadcrumb bar.
	Breadcrumbs []Crumb
}

// Crumb is one breadcrumb link.
type Crumb struct {
	Label string
	Href  string // "" renders the label as text (the current page)
}

// htmxConfig is read by htmx from <meta name="htmx-config">. It keeps htmx
// inside the CSP (no injected indicator <style>, no eval, no inline scripts
// from swapped content) and swaps 4xx/5xx responses so that the central
// error handler's fragments (an error panel) appear where the content would
// have gone; the server may redirect them with HX-Retarget/HX-Reswap.
const htmxConfig = `{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,` +
	`"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},` +
	`{"code":"[45]..","swap":true,"error":true},{"code":"...","swap":false}]}`

type navItem struct {
	section, label, href string
}

// navItems are the top navigation's links; Doctor only for admins (it would be refused to others).
func navItems(m Meta) []navItem {
	items := []navItem{
		{"overview", "Overview", paths.Overview},
		{"outboxes", "Outboxes", paths.Outboxes},
		{"kafka", "Kafka", paths.Kafka},
		{"rabbitmq", "RabbitMQ", paths.RabbitMQ},
		{"replays", "Replays", paths.Replays},
		{"notifications", "Notifications", paths.Notifications},
		{"audit", "Audit", paths.Audit},
	}
	if m.CanAdmin || m.AuthNone {
		items = append(items, navItem{"doctor", "Doctor", paths.Doctor})
	}
	return items
}

// pageTitle is the <title> text.
func pageTitle(m Meta) string {
	if m.Title == "" {
		return "Redrive"
	}
	return m.Title + " · Redrive"
}

// csrfHeaders is the hx-headers JSON carrying the CSRF token. json.Marshal
// quotes and escapes the token, so no token can break out of the JSON (and
// templ escapes the attribute).
func csrfHeaders(token string) string {
	b, err := json.Marshal(map[string]string{"X-CSRF-Token": token})
	if err != nil { // cannot happen for a map[string]string
		return "{}"
	}
	return string(b)
}
