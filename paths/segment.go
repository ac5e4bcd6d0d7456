package paths

import "net/url"

// Segment escapes s as one URL path segment (url.PathEscape) that survives browsers and
// proxies: they remove the dot segments "." and ".." from a path — written as they are or
// percent-encoded ("%2E%2E" too, by the URL standard) — so those two names are written with a
// trailing raw ";" (".;", "..;"), which PathEscape never produces for any name. A RabbitMQ queue
// or vhost may be named "..". ParseSegment reads the segment back.
func Segment(s string) string {
	if s == "." || s == ".." {
		return s + ";"
	}
	return url.PathEscape(s)
}

// ParseSegment is Segment's inverse for a path parameter as the router hands it over: escaped
// says whether the router matched the raw, still escaped path (the request's path had escapes
// that decoding changes) or the decoded one. A name that is literally ".;" is linked as ".%3B",
// so a raw ";" after the dots can only be Segment's.
func ParseSegment(v string, escaped bool) string {
	if v == ".;" || v == "..;" {
		return v[:len(v)-1]
	}
	if !escaped {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
