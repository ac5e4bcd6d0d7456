package layout

import "testing"

func TestSignedInUser(t *testing.T) {
	doc, _ := renderPage(t, Meta{User: "otto", Role: "operator", CSRFToken: "tok"})
	if got := doc.Find(`[data-testid="signed-in-user"]`).Text(); got != "otto (operator)" {
		t.Errorf("user = %q", got)
	}
	form := doc.Find(`form[data-testid="logout-form"]`)
	if m, _ := form.Attr("method"); m != "post" || form.AttrOr("action", "") != "/logout" ||
		form.Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" {
		t.Errorf("logout form: method %q action %q", m, form.AttrOr("action", ""))
	}
	doc, _ = renderPage(t, Meta{AuthNone: true})
	if count(doc, "signed-in-user") != 0 || count(doc, "logout-form") != 0 {
		t.Error("a user and sign-out shown without a user")
	}
}

// The Doctor link is for those the route lets in: admins, or everyone when auth is off.
func TestDoctorLinkForAdminsOnly(t *testing.T) {
	has := func(m Meta) bool {
		for _, it := range navItems(m) {
			if it.section == "doctor" {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name string
		m    Meta
		want bool
	}{
		{"admin", Meta{User: "ada", Role: "admin", CanAdmin: true, CanOperate: true}, true},
		{"operator", Meta{User: "oz", Role: "operator", CanOperate: true}, false},
		{"viewer", Meta{User: "vi", Role: "viewer"}, false},
		{"auth off", Meta{AuthNone: true}, true},
	} {
		if got := has(tc.m); got != tc.want {
			t.Errorf("%s: doctor link %v, want %v", tc.name, got, tc.want)
		}
	}
}
