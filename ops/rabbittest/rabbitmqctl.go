package rabbittest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// RabbitmqctlCommand is a rabbitmqctl set_policy / set_operator_policy / clear_policy command, as
// the console's advice prints them (rabbitmodel.LiftLimit, the doctor's fixes).
type RabbitmqctlCommand struct {
	Verb, Vhost, ApplyTo, Name, Pattern string
	Priority                            int
	Def                                 map[string]any // the definition, numbers as json.Number
}

// RabbitmqctlCommands parses every rabbitmqctl command in s, so that a test can run what the
// console advises (POSIX-shell words, single-quoted
// strings with quotes escaped in them as ShellQuote writes them).
func RabbitmqctlCommands(t testing.TB, s string) []RabbitmqctlCommand {
	t.Helper()
	var out []RabbitmqctlCommand
	for _, part := range strings.Split(s, "rabbitmqctl ")[1:] {
		words := shellWords(part)
		if len(words) == 0 {
			continue
		}
		c := RabbitmqctlCommand{Verb: words[0], Vhost: "/"}
		positional := 3
		if strings.HasPrefix(c.Verb, "clear_") {
			positional = 1
		}
		var pos []string
		for i := 1; i < len(words) && len(pos) < positional; i++ {
			switch words[i] {
			case "-p":
				i++
				c.Vhost = words[i]
			case "--apply-to":
				i++
				c.ApplyTo = words[i]
			case "--priority":
				i++
				p, err := strconv.Atoi(words[i])
				if err != nil {
					t.Fatalf("priority %q", words[i])
				}
				c.Priority = p
			default:
				pos = append(pos, words[i])
			}
		}
		if len(pos) != positional {
			t.Fatalf("cannot read command %q", part)
		}
		c.Name = pos[0]
		if positional == 3 {
			c.Pattern = pos[1]
			dec := json.NewDecoder(strings.NewReader(pos[2]))
			dec.UseNumber()
			if err := dec.Decode(&c.Def); err != nil {
				t.Fatalf("definition %q: %v", pos[2], err)
			}
		}
		out = append(out, c)
	}
	return out
}

// shellWords splits s into POSIX-shell words as far as the fix commands use them (unquoted words,
// single-quoted strings, and the two glued), stopping at a ';' outside quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case in && ch == '\'':
			in = false
		case in:
			cur.WriteByte(ch)
		case ch == '\'':
			in, quoted = true, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == ' ' || ch == ';':
			if cur.Len() > 0 || quoted {
				words = append(words, cur.String())
				cur.Reset()
				quoted = false
			}
			if ch == ';' {
				return words
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if cur.Len() > 0 || quoted {
		words = append(words, cur.String())
	}
	return words
}
