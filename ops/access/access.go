// Package access is who may do what in the console: one Role, ordered, each including the ones
// below it, and the Actor a use case is called by. The route table gives every route its least
// Role; the use cases that decide more finely (a forced replay, a large job, someone else's job,
// unmasked content) ask the Actor (Can) and refuse with ops.Require's error. Nothing here knows
// HTTP, and nothing here imports another Redrive package: configs validates role names with it.
package access

import "fmt"

// Role is an access level; each includes the ones below it, so roles compare with < and >=.
type Role int

// Roles, lowest first.
const (
	// Public needs no identity: health, readiness, metrics, static assets, the login page. As an
	// actor's role it means signed in but granted no role (auth.proxy.default_role empty).
	Public   Role = iota
	Viewer        // read everything (payloads redacted where configured)
	Operator      // release leases, requeue outbox events, plan and run replays, move offsets
	Admin         // force replays, larger jobs, cancel anyone's job, unredacted payloads, doctor, reload
)

// Names is the config's role names, lowest first: what ParseRole accepts.
var Names = []string{"viewer", "operator", "admin"}

// noRole is how Public is written in the audit log and on pages: a signed-in actor without a role.
const noRole = "none"

// ParseRole reads a role name of the config (auth.users[].role, auth.tokens[].role,
// auth.proxy.group_roles, export.min_role): "viewer", "operator" or "admin". Anything else,
// "" included, is an error (and Public).
func ParseRole(s string) (Role, error) {
	for i, n := range Names {
		if s == n {
			return Role(i + 1), nil
		}
	}
	return Public, fmt.Errorf("role must be viewer, operator or admin, got %q", s)
}

// String is the role's config name; Public is "none".
func (r Role) String() string {
	switch {
	case r == Public:
		return noRole
	case r > Public && int(r) <= len(Names):
		return Names[r-1]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText writes the role's name, so that a Role in JSON is the same string as in the config.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name; "none" is Public.
func (r *Role) UnmarshalText(b []byte) error {
	if string(b) == noRole {
		*r = Public
		return nil
	}
	v, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Actor is who a use case acts for, as the console established it: the audit log's actor and
// role, and what it checks a request against.
type Actor struct {
	Name  string // "alice", "token:ci-bot", "anonymous" (auth.mode none), "signal:SIGHUP"
	Role  Role
	Email string // proxy mode, when the proxy sends one
	// Owner is the person an API token acts for (auth.tokens[].owner); "" for everyone else.
	Owner string
}

// Person is who the actor is as the two-person rule counts people: a token's owner, or the actor
// itself (a user, a token without an owner).
func (a Actor) Person() string {
	if a.Owner != "" {
		return a.Owner
	}
	return a.Name
}

// Anonymous is the actor of a request no one is signed in to.
var Anonymous = Actor{Name: "anonymous"}

// Can reports whether the actor's role includes r.
func (a Actor) Can(r Role) bool { return a.Role >= r }
