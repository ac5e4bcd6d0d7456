package redact

import (
	"strings"
	"testing"

	"github.com/redrive/redrive/ops/kafka/kafkamodel"
)

// TestTrustMaskedGroupNamedByItsSample: a group whose type is masked is named by its sample
// record, which GroupRef reads back; a group whose type is not masked keeps it, and nothing else
// reads as a masked group's name.
func TestTrustMaskedGroupNamedByItsSample(t *testing.T) {
	g := kafkamodel.ErrorGroup{ExceptionType: "com.acme.SecretException", ExceptionCause: "com.acme.Cause", SamplePartition: 3, SampleOffset: 1234}
	byName, err := New([]string{"kafka_dlt-exception-fqcn"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := byName.ErrorGroup(g)
	if strings.Contains(m.ExceptionType, "Secret") || m.ExceptionCause != Redacted || !strings.HasPrefix(m.ExceptionType, Redacted) {
		t.Fatalf("the masked group: %q caused by %q", m.ExceptionType, m.ExceptionCause)
	}
	if p, o, ok := GroupRef(m.ExceptionType); !ok || p != 3 || o != 1234 {
		t.Errorf("GroupRef(%q) = %d, %d, %v; want 3, 1234", m.ExceptionType, p, o, ok)
	}
	if typ, cause := byName.GroupKey(g.ExceptionType, ""); typ != Redacted || cause != "" {
		t.Errorf("GroupKey: %q %q", typ, cause)
	}
	paths, err := New(nil, []string{"$.card"})
	if err != nil {
		t.Fatal(err)
	}
	if got := paths.ErrorGroup(g); got.ExceptionType != g.ExceptionType || got.ExceptionCause != g.ExceptionCause {
		t.Errorf("a group whose type is not masked: %q %q", got.ExceptionType, got.ExceptionCause)
	}
	for _, s := range []string{"", Redacted, "com.acme.X", Redacted + " (group of record -1:2)", Redacted + " (group of record 1:2) x",
		Redacted + " (group of record 1:)", "x" + Redacted + " (group of record 1:2)"} {
		if _, _, ok := GroupRef(s); ok {
			t.Errorf("GroupRef(%q) reads a record", s)
		}
	}
}
