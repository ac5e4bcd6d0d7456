package main

import (
	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/notify"
)

// notifySettings are the notifier's settings from the notify section, which configs has checked
// and given its defaults. The secrets (a channel's URL and signing secret, an SMTP password) go to
// the notifier as the strings it sends with; it never prints them.
func notifySettings(c configs.Notify) notify.Settings {
	s := notify.Settings{Interval: c.Interval.D(), BaseURL: c.BaseURL, MaxAttempts: c.MaxAttempts}
	for _, ch := range c.Channels {
		m := ch.SMTP
		s.Channels = append(s.Channels, notify.ChannelSettings{Name: ch.Name, Type: ch.Type, URL: string(ch.URL),
			Secret: string(ch.Secret), SignatureHeader: ch.SignatureHeader,
			SMTP: notify.SMTP{Host: m.Host, Port: m.Port, Username: m.Username, Password: string(m.Password), From: m.From,
				To: m.To, NoStartTLS: m.StartTLS != nil && !*m.StartTLS, CAFile: m.CAFile}})
	}
	for _, r := range c.Rules {
		s.Rules = append(s.Rules, notify.Rule{Match: notify.Match(r.Match), Channels: r.Channels, RepeatEvery: r.RepeatEvery.D()})
	}
	return s
}
