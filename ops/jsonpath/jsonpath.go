// Package jsonpath is the one grammar of the configuration's json_paths (redaction.json_paths and
// message_id.json_paths). It imports nothing of the project: configs validates with it, and the
// message-id extraction (ops) and redaction (ops/redact) read with it.
package jsonpath

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a parsed path of the one grammar of json_paths (redaction.json_paths and
// message_id.json_paths): $ then steps — .key; ['key'] or ["key"] for a key with dots, brackets or
// quotes; [n], an array index; and .* or [*], any key or any element (redaction only: an id is
// one value). Parse reads it.
type Path []Step

// Step is one step of a Path.
type Step struct {
	Kind  StepKind
	Key   string // StepKey, StepKeyOrIndex
	Index int    // StepIndex
}

// StepKind says what a Step matches.
type StepKind uint8

// Step kinds.
const (
	StepKey      StepKind = iota // the object member Key
	StepAnyKey                   // every member of an object (.*)
	StepIndex                    // the array element Index
	StepAnyIndex                 // every element of an array ([*])
	// StepKeyOrIndex is a segment of the old bare form of message_id.json_paths ("meta.id",
	// "items.0.id"): the member Key of an object, or the element Key names of an array.
	StepKeyOrIndex
)

// Parse reads a path of the json_paths grammar; the error names the path and says how
// to write it.
func Parse(p string) (Path, error) {
	bad := func(why string) error {
		return fmt.Errorf("path %q: %s (write it like $.card.number, $.items[*].iban or $['odd.key'])", p, why)
	}
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil, bad("must start with $")
	}
	var steps Path
	for rest != "" {
		switch {
		case rest[0] == '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			key := rest[1 : 1+end]
			switch {
			case key == "":
				return nil, bad("empty key")
			case strings.ContainsAny(key, `]'"`):
				return nil, bad(fmt.Sprintf("write the key %q as ['%s']", key, key))
			case key == "*":
				steps = append(steps, Step{Kind: StepAnyKey})
			default:
				steps = append(steps, Step{Kind: StepKey, Key: key})
			}
			rest = rest[1+end:]
		case strings.HasPrefix(rest, "[*]"):
			steps = append(steps, Step{Kind: StepAnyIndex})
			rest = rest[3:]
		case strings.HasPrefix(rest, "['"), strings.HasPrefix(rest, `["`):
			closing := rest[1:2] + "]"
			end := strings.Index(rest[2:], closing)
			if end < 0 {
				return nil, bad("unterminated quoted key")
			}
			steps = append(steps, Step{Kind: StepKey, Key: rest[2 : 2+end]})
			rest = rest[2+end+2:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad("unterminated [")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 || rest[1] == '+' {
				return nil, bad("an index must be a number or *")
			}
			steps = append(steps, Step{Kind: StepIndex, Index: n})
			rest = rest[end+1:]
		default:
			return nil, bad(fmt.Sprintf("unexpected %q", rest[:1]))
		}
	}
	if len(steps) == 0 {
		return nil, bad("names nothing inside the document")
	}
	return steps, nil
}

// ParseMessageID reads one of message_id.json_paths: the grammar's form ($.meta.id), without
// wildcards, or the old bare form (meta.id, items.0.id), which bare reports; it is still read as
// before, and the start-up log says how to write it.
func ParseMessageID(p string) (path Path, bare bool, err error) {
	if !strings.HasPrefix(p, "$") {
		for seg := range strings.SplitSeq(p, ".") {
			path = append(path, Step{Kind: StepKeyOrIndex, Key: seg})
		}
		return path, true, nil
	}
	if path, err = Parse(p); err != nil {
		return nil, false, err
	}
	for _, s := range path {
		if s.Kind == StepAnyKey || s.Kind == StepAnyIndex {
			return nil, false, fmt.Errorf("path %q: a message id is one value, so .* and [*] do not apply", p)
		}
	}
	return path, false, nil
}

// String writes the path in the grammar's form, a key that needs it quoted (['a.b']). A number of
// the old bare form is written as an index ("items.0.id" → $.items[0].id), what it meant for an
// array; $.items['0'].id names an object's member "0".
func (p Path) String() string {
	var sb strings.Builder
	sb.WriteByte('$')
	for _, s := range p {
		switch s.Kind {
		case StepAnyKey:
			sb.WriteString(".*")
		case StepAnyIndex:
			sb.WriteString("[*]")
		case StepIndex:
			sb.WriteString("[" + strconv.Itoa(s.Index) + "]")
		case StepKeyOrIndex:
			if _, err := strconv.Atoi(s.Key); err == nil {
				sb.WriteString("[" + s.Key + "]") // read as an index where the value is an array
				continue
			}
			fallthrough
		default:
			switch {
			case strings.Contains(s.Key, "'"):
				sb.WriteString(`["` + s.Key + `"]`)
			case s.Key == "" || s.Key == "*" || strings.ContainsAny(s.Key, `.[]"`):
				sb.WriteString("['" + s.Key + "']")
			default:
				sb.WriteString("." + s.Key)
			}
		}
	}
	return sb.String()
}
