package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redrive/redrive/ops/kfaketest"
	"github.com/redrive/redrive/ops/pgtest"
	"github.com/redrive/redrive/ops/rabbittest"
	"github.com/redrive/redrive/ops/waittest"
	"github.com/redrive/redrive/paths"
)

// The secrets of the masking walk. The payload of a failed order holds a card number, a PIN
// shorter than four characters and a customer's name, each masked by a JSON path; its exception
// message quotes all three, and its stack trace repeats the message, cut inside it (Spring AMQP
// cuts x-exception-stacktrace to fit a frame). A second failure's message names another person,
// in its exception message alone: hidden only where that header is masked by name.
const (
	secretCard     = "4000000000000002"
	secretPIN      = "Ж7ж"
	secretCustomer = "Zoë Quist"
	secretOnlyName = "Ada Vorn"
)

var (
	maskedPayload = fmt.Sprintf(`{"orderId":"o-1","card":{"number":%q},"pin":%q,"customer":%q}`, secretCard, secretPIN, secretCustomer)
	paymentError  = fmt.Sprintf("card %s declined for %s (pin %s)", secretCard, secretCustomer, secretPIN)
	paymentTrace  = "com.acme.PaymentException: " + paymentError[:len(paymentError)-12] // cut inside the message
	refundError   = "refund refused for " + secretOnlyName
	refundTrace   = "com.acme.RefundException: " + refundError[:len(refundError)-2] // cut inside the name
)

// maskingWorld is one of everything content can come from: a Kafka DLT, a RabbitMQ DLQ, an
// outbox, each holding the two failures.
type maskingWorld struct {
	broker                  string
	vhost, amqpURL, mgmtURL string
	outboxDSN               string
	raw                     int // the raw size of the payment record, which no one may learn
}

func newMaskingWorld(t *testing.T) maskingWorld {
	t.Helper()
	ctx := waittest.Context(t, 2*time.Minute)
	k := startKafka(t, map[string]int32{"orders": 1, "orders.DLT": 1})
	w := maskingWorld{broker: k.Addrs()[0]}
	cl := kfaketest.Client(t, k.Cluster())
	dead := func(id, typ, msg, trace, value string) *kgo.Record {
		return &kgo.Record{Topic: "orders.DLT", Key: []byte("order-" + id), Value: []byte(value), Headers: []kgo.RecordHeader{
			{Key: "messageId", Value: []byte(id)},
			{Key: "kafka_dlt-original-topic", Value: []byte("orders")},
			{Key: "kafka_dlt-exception-fqcn", Value: []byte(typ)},
			{Key: "kafka_dlt-exception-message", Value: []byte(msg)},
			{Key: "kafka_dlt-exception-stacktrace", Value: []byte(trace)},
			// The RabbitMQ names of the same, which Kafka producers bridged from Spring AMQP write.
			{Key: "x-exception-stacktrace", Value: []byte(trace)}}}
	}
	pay := dead("m-1", "com.acme.PaymentException", paymentError, paymentTrace, maskedPayload)
	for _, h := range pay.Headers {
		w.raw += len(h.Key) + len(h.Value)
	}
	w.raw += len(pay.Key) + len(pay.Value)
	mustDo(t, cl.ProduceSync(ctx, pay, dead("m-2", "com.acme.RefundException", refundError, refundTrace, `{"orderId":"o-2"}`)).FirstErr())

	var ch *amqp.Channel
	w.vhost, ch, _ = deadLetteredOrders(t, ctx, 4, func(i int) amqp.Publishing {
		p := amqp.Publishing{MessageId: fmt.Sprintf("r-%d", i), ContentType: "application/json", DeliveryMode: amqp.Persistent,
			Body: []byte(maskedPayload), Headers: amqp.Table{"x-exception-message": paymentError, "x-exception-stacktrace": paymentTrace}}
		if i == 1 {
			p.Body, p.Headers = []byte(`{"orderId":"o-2"}`), amqp.Table{"x-exception-message": refundError, "x-exception-stacktrace": refundTrace}
		}
		return p
	})
	_ = ch
	cfg := rabbittest.Config(t, w.vhost)
	w.amqpURL, w.mgmtURL = string(cfg.URL), cfg.ManagementURL

	w.outboxDSN = seededOutbox(t)
	pgtest.Exec(t, w.outboxDSN, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, schema_version,
		payload, status, attempts, available_at, created_at, last_error)
		VALUES ('evt-pay', 'Order', 'ord-pay', 'OrderPaid', 1, $1, 'DEAD', 10, now(), now(), $2)`,
		maskedPayload, "com.acme.PaymentException: "+paymentError)
	return w
}

// TestMaskedEverywhere walks every place content can appear — pages and API answers of every
// source, exports, the archive, the audit log, the trace, plans, the overview and the
// notifications of every channel — with masked secrets in the content, as a viewer and as an
// operator, and finds them nowhere: not in a summary quoting an exception message, not in a stack
// trace repeating a masked message (cut short, or whole), not in an outbox event's last_error, not
// as a PIN of three characters, not as the length of what was hidden. Two configurations: JSON
// paths only (what a payload masks is followed into every field that repeats it), and the
// exception message headers masked by name besides (every stack trace repeating them hides).
func TestMaskedEverywhere(t *testing.T) {
	w := newMaskingWorld(t)
	for i, tc := range []struct {
		name, headers string
		secrets       []string
	}{
		{"JSONPaths", "[authorization]", []string{secretCard, secretPIN, secretCustomer}},
		{"ExceptionMessagesByName", "[authorization, kafka_dlt-exception-message, x-exception-message]",
			[]string{secretCard, secretPIN, secretCustomer, secretOnlyName[:len(secretOnlyName)-2]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			walkMasked(t, w, tc.headers, tc.secrets, fmt.Sprintf("r-%d", 2+i))
		})
	}
}

func walkMasked(t *testing.T, w maskingWorld, headers string, secrets []string, discard string) {
	hook, hookBodies := webhookReceiver(t)
	slackURL, slackBodies := webhookReceiver(t)
	mail := newPlainMailbox(t)
	base := startConsole(t, basicAuth("")+fmt.Sprintf(`
store: {dsn: %q}
sampler: {interval: 1s}
outboxes: [{name: orders, dsn: %q}]
kafka: [{name: main, brokers: [%q]}]
rabbitmq: [{name: main, url: %q, management_url: %q, vhosts: [%q]}]
redaction:
  headers: %s
  json_paths: ["$.card.number", "$.pin", "$.customer"]
notify:
  interval: 1s
  new_group_window: 1h
  channels:
    - {name: hook, type: webhook, url: %q}
    - {name: chat, type: slack, url: %q}
    - {name: mail, type: email, smtp: {host: 127.0.0.1, port: %d, from: redrive@example.com, to: [oncall@example.com], starttls: false}}
  rules: [{match: {kind: new_error_group}, channels: [hook, chat, mail]}, {match: {kind: outbox_dead}, channels: [hook, chat, mail]}]
`, pgtest.NewDatabase(t), w.outboxDSN, w.broker, w.amqpURL, w.mgmtURL, w.vhost, headers, hook, slackURL, mail.port))

	// What people do with the content: an operator plans an edit and retry of the payment (the
	// audit log records the value before and after), and discards one message into the archive.
	edit := fmt.Sprintf(`{"edit":{"value":%q},"source":{"kind":"kafka","cluster":"main","topic":"orders.DLT","records":[{"partition":0,"offset":0}]}}`,
		strings.Replace(maskedPayload, `"o-1"`, `"o-1-retried"`, 1))
	r := bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", edit)
	if r.status != http.StatusOK {
		t.Fatalf("edit plan: %d %s", r.status, r.body)
	}
	planID := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, r).PlanID
	r = bearer(t, "POST", base+paths.APIPlanReplay, "tok-operator", fmt.Sprintf(
		`{"action":"discard","source":{"kind":"rabbitmq","broker":"main","vhost":%q,"queue":"orders.dlq","limit":10},"filter":{"message_ids":[%q]}}`, w.vhost, discard))
	if r.status != http.StatusOK {
		t.Fatalf("discard plan: %d %s", r.status, r.body)
	}
	discardPlan := decode[struct {
		PlanID string `json:"plan_id"`
	}](t, r).PlanID
	r = bearer(t, "POST", base+paths.APIReplays, "tok-operator", fmt.Sprintf(`{"plan_id":%q,"reason":"poison"}`, discardPlan))
	if r.status != http.StatusOK {
		t.Fatalf("discard: %d %s", r.status, r.body)
	}
	job := decode[struct{ ID string }](t, r).ID
	waittest.Until(t, 30*time.Second, "the discard archives "+discard, func() bool {
		return strings.Contains(bearer(t, "GET", base+paths.APIReplay(job), "tok-viewer", "").body, `"status":"done"`)
	})

	// The notifications of both error groups and of the DEAD outbox event, on every channel.
	waittest.Until(t, 60*time.Second, "every channel's notifications", func() bool {
		all := func(bodies []string) bool {
			b := strings.Join(bodies, "\n")
			return strings.Contains(b, "PaymentException") && strings.Contains(b, "RefundException") && strings.Contains(b, "outbox_dead")
		}
		return all(hookBodies()) && all(slackBodies()) && all(mail.messages())
	})

	var eventID int64
	list := bearer(t, "GET", base+paths.APIOutboxEvents("orders")+"?aggregate_id=ord-pay", "tok-viewer", "")
	if evs := decode[struct{ Events []struct{ ID int64 } }](t, list).Events; len(evs) == 1 {
		eventID = evs[0].ID
	} else {
		t.Fatalf("the outbox event: %s", list.body)
	}

	qv := func(p string, q url.Values) string { return paths.WithQuery(p, q) }
	api := []string{
		paths.APIOverview,
		qv(paths.APIOutboxEvents("orders"), url.Values{"status": {"DEAD"}}),
		paths.APIOutboxEvent("orders", eventID),
		qv(paths.APIKafkaRecords("main", "orders.DLT"), url.Values{"partition": {"0"}}),
		qv(paths.APIKafkaRecords("main", "orders.DLT"), url.Values{"filter": {`size > 0`}}),
		paths.APIKafkaErrorGroups("main", "orders.DLT"),
		paths.APIDeadLetterTopics("main"),
		paths.APIQueueMessages("main", w.vhost, "orders.dlq"),
		qv(paths.APIQueueMessages("main", w.vhost, "orders.dlq"), url.Values{"filter": {`true`}}),
		paths.APIArchive,
		paths.APIAudit,
		paths.APIReplayPlan(planID),
		paths.APIReplayPlan(discardPlan),
		paths.APIReplays,
		paths.APINotifications,
		qv(paths.APITrace, url.Values{"message_id": {"m-1"}}),
		qv(paths.APITrace, url.Values{"event_id": {"evt-pay"}}),
		qv(paths.APITrace, url.Values{"message_id": {"r-0"}}),
	}
	exports := []string{
		paths.APIKafkaExport("main", "orders.DLT"),
		qv(paths.APIKafkaExport("main", "orders.DLT"), url.Values{"format": {"csv"}}),
		paths.APIQueueExport("main", w.vhost, "orders.dlq"),
		qv(paths.APIQueueExport("main", w.vhost, "orders.dlq"), url.Values{"format": {"csv"}}),
	}
	pages := []string{
		paths.Overview,
		paths.Outbox("orders"),
		qv(paths.Outbox("orders"), url.Values{"status": {"DEAD"}}),
		paths.OutboxEvent("orders", eventID),
		paths.KafkaTopic("main", "orders.DLT"),
		qv(paths.KafkaTopic("main", "orders.DLT"), url.Values{"filter": {`size > 0`}}),
		paths.KafkaTopicErrors("main", "orders.DLT"),
		paths.Queue("main", w.vhost, "orders.dlq"),
		paths.QueueMessages("main", w.vhost, "orders.dlq"),
		paths.Archive,
		paths.Audit,
		paths.ReplayPlan(planID),
		paths.ReplayPlan(discardPlan),
		paths.Replay(job),
		paths.Notifications,
		qv(paths.Trace, url.Values{"message_id": {"m-1"}, "wait": {"1"}}),
		qv(paths.Trace, url.Values{"event_id": {"evt-pay"}, "wait": {"1"}}),
		qv(paths.Trace, url.Values{"message_id": {"r-0"}, "wait": {"1"}}),
	}
	leaks := func(where, body string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(body, s) {
				i := strings.Index(body, s)
				t.Errorf("%s shows %q: …%s…", where, s, body[max(0, i-200):min(len(body), i+100)])
			}
		}
	}
	for _, role := range []string{"viewer", "operator"} {
		for _, p := range api {
			r := bearer(t, "GET", base+p, "tok-"+role, "")
			if r.status != http.StatusOK {
				t.Errorf("%s GET %s: %d %.300s", role, p, r.status, r.body)
			}
			leaks(role+" GET "+p, r.body)
		}
		for _, p := range exports {
			r := bearer(t, "GET", base+p, "tok-"+role, "")
			if want := map[string]int{"viewer": http.StatusForbidden, "operator": http.StatusOK}[role]; r.status != want {
				t.Errorf("%s GET %s: %d, want %d", role, p, r.status, want)
			}
			leaks(role+" GET "+p, r.body)
		}
		user := map[string]string{"viewer": "vera", "operator": "otto"}[role]
		client, _ := signedIn(t, base, user)
		for _, p := range pages {
			r := do(t, client, "GET", base+p, "", "")
			if r.status != http.StatusOK {
				t.Errorf("%s page %s: %d", role, p, r.status)
			}
			leaks(role+" page "+p, r.body)
		}
		// The topic page's rows load their full views when expanded (htmx): masked as the page was.
		for off := range int64(2) {
			p := paths.KafkaRecord("main", "orders.DLT", 0, off)
			r := hx(t, client, base+p)
			if want := []string{"PaymentException", "RefundException"}[off]; r.status != http.StatusOK ||
				!strings.Contains(r.body, `data-testid="record"`) || !strings.Contains(r.body, want) {
				t.Errorf("%s view of record 0:%d: %d %.300s; want the record's view, naming %s", role, off, r.status, r.body, want)
			}
			leaks(role+" view "+p, r.body)
		}
	}
	for name, bodies := range map[string][]string{"webhook": hookBodies(), "slack": slackBodies(), "email": mail.messages()} {
		for _, b := range bodies {
			leaks(name+" notification", b)
		}
	}
	// An admin's revealed page loads its rows' views revealed, each audited as the reveal of that
	// record; a viewer asking for a revealed view is refused.
	ada, _ := signedIn(t, base, "ada")
	revealed := do(t, ada, "GET", base+qv(paths.KafkaTopic("main", "orders.DLT"), url.Values{"partition": {"0"}, "reveal": {"true"}}), "", "")
	view := paths.KafkaRecord("main", "orders.DLT", 0, 0)
	src := regexp.MustCompile(`hx-get="(` + regexp.QuoteMeta(view) + `[^"]*)"`).FindStringSubmatch(revealed.body)
	if revealed.status != http.StatusOK || src == nil || !strings.Contains(src[1], "reveal=true") {
		t.Fatalf("the revealed page's row of 0:0 loads %q (status %d); want its view revealed", src, revealed.status)
	}
	if r := hx(t, ada, base+html.UnescapeString(src[1])); r.status != http.StatusOK || !strings.Contains(r.body, secretCard) {
		t.Errorf("the admin's revealed view of 0:0: %d, card number shown %v", r.status, strings.Contains(r.body, secretCard))
	}
	if a := bearer(t, "GET", base+"/api/v1/audit?action=content.reveal", "tok-admin", ""); !strings.Contains(a.body, `"path":"`+view+`"`) {
		t.Errorf("the revealed view is not audited as a reveal of %s: %.600s", view, a.body)
	}
	vera, _ := signedIn(t, base, "vera")
	if r := hx(t, vera, base+view+"?reveal=true"); r.status != http.StatusForbidden || strings.Contains(r.body, secretCard) {
		t.Errorf("a viewer's revealed view: %d", r.status)
	}

	// Masking reveals no length: the record's size is that of what it shows, and a filter on size
	// reads the same.
	recs := decode[struct {
		Records []struct {
			Offset int64
			Size   int
		}
	}](t, bearer(t, "GET", base+qv(paths.APIKafkaRecords("main", "orders.DLT"), url.Values{"partition": {"0"}}), "tok-viewer", ""))
	var shownSize int
	for _, rec := range recs.Records {
		if rec.Offset == 0 {
			shownSize = rec.Size
		}
	}
	if shownSize == 0 || shownSize == w.raw {
		t.Errorf("the payment record's size is %d, its raw size %d: masking must not tell it", shownSize, w.raw)
	}
	for size, want := range map[int]int{shownSize: 1, w.raw: 0} {
		r := bearer(t, "GET", base+qv(paths.APIKafkaRecords("main", "orders.DLT"), url.Values{"filter": {fmt.Sprintf("offset == 0 && size == %d", size)}}), "tok-viewer", "")
		if got := decode[struct{ Matched int }](t, r).Matched; got != want {
			t.Errorf("filter size == %d matched %d, want %d: %s", size, got, want, r.body)
		}
	}

	// A viewer cannot confirm a guess at masked content through the trace: the audit log holds
	// the edit's values, and a trace by the card number finds no entry.
	for _, guess := range []string{secretCard, "o-1-retried"} {
		a := decode[traceAnswer](t, bearer(t, "GET", base+qv(paths.APITrace, url.Values{"q": {guess}}), "tok-viewer", ""))
		for _, s := range a.Steps {
			if s.Kind == "audit" && s.Found {
				t.Errorf("a viewer's trace by %q found the audit entry %q", guess, s.Detail)
			}
		}
		found := false
		for _, s := range decode[traceAnswer](t, bearer(t, "GET", base+qv(paths.APITrace, url.Values{"q": {guess}, "reveal": {"true"}}), "tok-admin", "")).Steps {
			found = found || (s.Kind == "audit" && s.Found)
		}
		if !found {
			t.Errorf("an admin who reveals finds no audit entry by %q", guess)
		}
	}
}

// plainMailbox is an SMTP server on loopback without TLS or auth (starttls: false sends to
// loopback in clear); messages are the decoded subjects and bodies it received.
type plainMailbox struct {
	port int
	mu   sync.Mutex
	msgs []string
}

func newPlainMailbox(t *testing.T) *plainMailbox {
	t.Helper()
	m := &plainMailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &plainSession{m: m}, nil }))
	srv.Domain, srv.AllowInsecureAuth = "127.0.0.1", true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	m.port = ln.Addr().(*net.TCPAddr).Port
	return m
}

func (m *plainMailbox) messages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs)
}

type plainSession struct{ m *plainMailbox }

func (s *plainSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *plainSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *plainSession) Reset()                               {}
func (s *plainSession) Logout() error                        { return nil }

// Data keeps the message as a person reads it: the subject decoded, the body out of
// quoted-printable.
func (s *plainSession) Data(r io.Reader) error {
	br := bufio.NewReader(r)
	var out strings.Builder
	dec := new(mime.WordDecoder)
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "Subject: "); ok {
			if d, err := dec.DecodeHeader(v); err == nil {
				v = d
			}
			out.WriteString("Subject: " + v + "\n")
		}
		if line == "" || err != nil {
			break
		}
	}
	body, err := io.ReadAll(quotedprintable.NewReader(br))
	out.Write(body)
	s.m.mu.Lock()
	s.m.msgs = append(s.m.msgs, out.String())
	s.m.mu.Unlock()
	return err
}
