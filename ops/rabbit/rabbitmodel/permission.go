package rabbitmodel

// Permission is a user's permission regexes in one vhost.
type Permission struct {
	Vhost, Configure, Write, Read string
}
