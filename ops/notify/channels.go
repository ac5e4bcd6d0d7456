package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/smtp"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redrive/redrive/ops"
	"github.com/redrive/redrive/ops/payload"
)

// Channel is one destination of notifications.
type Channel interface {
	// Name is the channel's name in notify.channels.
	Name() string
	// Send delivers one event; an error means it was not (or may not have been) delivered.
	Send(ctx context.Context, e Event) error
}

// sendTimeout bounds one delivery attempt.
const sendTimeout = 10 * time.Second

// NewChannel builds a channel from its settings. client is the HTTP client
// of webhook and Slack channels; nil means one with a 10 s timeout.
func NewChannel(c ChannelSettings, client *http.Client) (Channel, error) {
	if client == nil {
		client = &http.Client{Timeout: sendTimeout}
	}
	switch c.Type {
	case "webhook":
		return &webhook{name: c.Name, url: c.URL, secret: []byte(c.Secret), header: c.SignatureHeader, client: client}, nil
	case "slack":
		return &slack{name: c.Name, url: c.URL, client: client}, nil
	case "email":
		m := &email{name: c.Name, cfg: c.SMTP}
		if c.SMTP.CAFile != "" {
			pem, err := os.ReadFile(c.SMTP.CAFile)
			if err != nil {
				return nil, fmt.Errorf("notify channel %s: smtp.ca_file: %w", c.Name, err)
			}
			m.roots = x509.NewCertPool()
			if !m.roots.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("notify channel %s: smtp.ca_file: no PEM certificate: %w", c.Name, ops.ErrInvalid)
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("notify channel %s: type %q: %w", c.Name, c.Type, ops.ErrInvalid)
}

// Sign is the webhook signature of body: "sha256=" + hex(HMAC-SHA256(secret, body)).
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

type webhook struct {
	name, url, header string
	secret            []byte
	client            *http.Client
}

func (w *webhook) Name() string { return w.name }

func (w *webhook) Send(ctx context.Context, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if len(w.secret) > 0 {
		h.Set(w.header, Sign(w.secret, body))
	}
	return post(ctx, w.client, w.url, h, body)
}

// post sends body and wants a 2xx; the answer's first bytes say why not.
func post(ctx context.Context, client *http.Client, url string, h http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		// The URL may carry the channel's secret: the client reads that it is wrong, not what it is.
		return &ops.Error{Kind: ops.ErrInvalid, Message: "the channel's URL cannot be used; check it in notify.channels", Err: err}
	}
	req.Header = h
	req.Header.Set("User-Agent", "redrive-notify")
	resp, err := client.Do(req)
	if err != nil {
		// The URL may hold a token (Slack's does): say where without it.
		if ue, ok := err.(interface{ Unwrap() error }); ok {
			return fmt.Errorf("post to %s: %w", req.URL.Host, ue.Unwrap())
		}
		return fmt.Errorf("post to %s: %w", req.URL.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return fmt.Errorf("%s answered %d %s", req.URL.Host, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return nil
}

type slack struct {
	name, url string
	client    *http.Client
}

func (s *slack) Name() string { return s.name }

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// SlackMessage is the incoming-webhook body of e: a header, the title and summary, the labels,
// and a button to the console page when the link is absolute (notify.base_url set).
func SlackMessage(e Event) map[string]any {
	head := stateWord(e.State) + ": " + e.Kind
	text := "*" + slackEscape(e.Title) + "*"
	if e.Summary != "" {
		text += "\n" + slackEscape(e.Summary)
	}
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		labels = append(labels, k+"="+e.Labels[k])
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": payload.Clip(head, 150)}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": payload.Clip(text, 3000)}},
		map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn",
			"text": payload.Clip(slackEscape(e.Severity+" · "+strings.Join(labels, " ")+" · "+e.At.UTC().Format(time.RFC3339)), 3000)}}},
	}
	if strings.HasPrefix(e.Link, "http://") || strings.HasPrefix(e.Link, "https://") {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{"type": "button",
			"text": map[string]any{"type": "plain_text", "text": "Open in Redrive"}, "url": e.Link}}})
	}
	// The fallback text (notifications, clients without blocks) is mrkdwn too: escaped as the blocks
	// are, so that "<!channel>" or "<https://evil|…>" in a queue or exception name stays text.
	return map[string]any{"text": stateWord(e.State) + ": " + slackEscape(e.Title), "blocks": blocks}
}

func (s *slack) Send(ctx context.Context, e Event) error {
	body, err := json.Marshal(SlackMessage(e))
	if err != nil {
		return err
	}
	return post(ctx, s.client, s.url, http.Header{"Content-Type": {"application/json"}}, body)
}

type email struct {
	name  string
	cfg   SMTP
	roots *x509.CertPool // nil: the system's
}

func (m *email) Name() string { return m.name }

// oneLine keeps a header value on one line (no header injection through a title).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (m *email) Send(ctx context.Context, e Event) error {
	addr := net.JoinHostPort(m.cfg.Host, strconv.Itoa(m.cfg.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(sendTimeout)
	}
	_ = conn.SetDeadline(dl)
	c, err := smtp.NewClient(conn, m.cfg.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	defer c.Close()
	if !m.cfg.NoStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("smtp %s: the server offers no STARTTLS (set starttls: false to send in clear)", addr)
		}
		if err := c.StartTLS(&tls.Config{ServerName: m.cfg.Host, RootCAs: m.roots, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("smtp %s: starttls: %w", addr, err)
		}
	}
	if m.cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.cfg.Username, m.cfg.Password, m.cfg.Host)); err != nil {
			return fmt.Errorf("smtp %s: auth: %w", addr, err)
		}
	}
	if err := c.Mail(m.cfg.From); err != nil {
		return fmt.Errorf("smtp %s: MAIL FROM: %w", addr, err)
	}
	for _, to := range m.cfg.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("smtp %s: RCPT TO %s: %w", addr, to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", addr, err)
	}
	if _, err := w.Write(EmailMessage(m.cfg.From, m.cfg.To, e)); err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", addr, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", addr, err)
	}
	return c.Quit()
}

// EmailMessage is the RFC 5322 message of e: subject "[Redrive] FIRING: <title>", a plain-text
// quoted-printable body.
func EmailMessage(from string, to []string, e Event) []byte {
	var b bytes.Buffer
	subject := "[Redrive] " + strings.ToUpper(e.State) + ": " + oneLine(e.Title)
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\n", oneLine(from),
		oneLine(strings.Join(to, ", ")), mime.QEncoding.Encode("utf-8", payload.Clip(subject, 200)), e.At.Format(time.RFC1123Z))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	fmt.Fprintf(qp, "%s\r\n\r\n", e.Title)
	if e.Summary != "" {
		fmt.Fprintf(qp, "%s\r\n\r\n", e.Summary)
	}
	fmt.Fprintf(qp, "State: %s\r\nSeverity: %s\r\nKind: %s\r\nKey: %s\r\n", e.State, e.Severity, e.Kind, e.Key)
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		fmt.Fprintf(qp, "%s: %s\r\n", k, e.Labels[k])
	}
	fmt.Fprintf(qp, "At: %s\r\n", e.At.UTC().Format(time.RFC3339))
	if e.Link != "" {
		fmt.Fprintf(qp, "\r\n%s\r\n", e.Link)
	}
	qp.Close()
	return b.Bytes()
}

func stateWord(state string) string {
	switch state {
	case StateFiring:
		return "Firing"
	case StateResolved:
		return "Resolved"
	}
	return "Test"
}
