package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/notify"
)

// The notify section reaches the notifier whole: every key, the durations as durations, the
// secrets as the strings sent with, and starttls — on unless set false — as NoStartTLS.
func TestNotifySettingsFromConfig(t *testing.T) {
	cfg, err := configs.Parse([]byte(`
auth: {mode: none}
store: {dsn: "postgres://u@127.0.0.1/db"}
notify:
  interval: 45s
  base_url: https://redrive.example.com
  max_attempts: 4
  channels:
    - {name: hook, type: webhook, url: "https://hooks.example.com/x?token=t0k", secret: s1gn, signature_header: X-Sig}
    - {name: mail, type: email, smtp: {host: smtp.example.com, port: 25, username: u, password: pw, from: a@example.com, to: [b@example.com], starttls: false, ca_file: /ca.pem}}
    - {name: tls, type: email, smtp: {host: smtp.example.com, from: a@example.com, to: [b@example.com]}}
  rules:
    - {match: {kind: kafka_group, cluster: main, topic: t, queue: q, group: g, severity: critical}, channels: [hook, mail], repeat_every: 2h}
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := notify.Settings{Interval: 45 * time.Second, BaseURL: "https://redrive.example.com", MaxAttempts: 4,
		Channels: []notify.ChannelSettings{
			{Name: "hook", Type: "webhook", URL: "https://hooks.example.com/x?token=t0k", Secret: "s1gn", SignatureHeader: "X-Sig"},
			{Name: "mail", Type: "email", SignatureHeader: "X-Redrive-Signature", SMTP: notify.SMTP{Host: "smtp.example.com", Port: 25,
				Username: "u", Password: "pw", From: "a@example.com", To: []string{"b@example.com"}, NoStartTLS: true, CAFile: "/ca.pem"}},
			{Name: "tls", Type: "email", SignatureHeader: "X-Redrive-Signature", SMTP: notify.SMTP{Host: "smtp.example.com", Port: 587,
				From: "a@example.com", To: []string{"b@example.com"}}},
		},
		Rules: []notify.Rule{{Match: notify.Match{Kind: "kafka_group", Cluster: "main", Topic: "t", Queue: "q", Group: "g", Severity: "critical"},
			Channels: []string{"hook", "mail"}, RepeatEvery: 2 * time.Hour}}}
	if got := notifySettings(cfg.Notify); !reflect.DeepEqual(got, want) {
		t.Errorf("notify settings\n got %+v\nwant %+v", got, want)
	}
}
