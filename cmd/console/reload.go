package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/access"
	"github.com/redrive/redrive/web"
)

// reloadOnSIGHUP reloads the config each time the process gets SIGHUP, until ctx ends or stop is
// called. A refused file is logged and audited by the Reloader; the running config keeps serving.
func reloadOnSIGHUP(ctx context.Context, r *web.Reloader) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_, _ = r.Reload(ctx, access.Actor{Name: "signal:SIGHUP"}, "")
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}

// registerReload adds the parts of the app that a config reload changes in place: the
// notification rules and channels, and the thresholds the sampler and the outboxes judge by.
// A cluster or outbox that the new file adds or drops is a restart (the kafka or outboxes
// section is then reported as such); the thresholds of the others are applied.
func (a *app) registerReload(r *web.Reloader) {
	if a.notifier != nil {
		r.Register(web.PartNotify, func(c *configs.Config) (func(), error) { return a.notifier.PrepareReload(notifySettings(c.Notify)) })
	}
	r.Register(web.PartThresholds, func(c *configs.Config) (func(), error) {
		var apply []func()
		if a.sampler != nil {
			for _, k := range c.Kafka {
				if _, running := a.lagRules[k.Name]; running {
					apply = append(apply, func() { _ = a.sampler.SetLagRules(k.Name, lagRules(k.Lag)) })
				}
			}
		}
		for _, o := range c.Outboxes {
			for _, running := range a.outboxes {
				if running.Name() == o.Name {
					apply = append(apply, func() { running.SetStaleReadyAfter(o.StaleReadyAfter.D()) })
				}
			}
		}
		return func() {
			for _, f := range apply {
				f()
			}
		}, nil
	})
}
