package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redrive/redrive/handlers"
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
				_, _ = r.Reload(ctx, handlers.Actor{Name: "signal:SIGHUP"}, "")
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		cancel()
		<-done
	}
}
