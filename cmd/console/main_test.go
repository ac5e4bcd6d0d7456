package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// envRunConsole makes the test binary act as the console itself, so that tests can run it as a
// real subprocess (and SIGKILL it) without building a separate binary.
const envRunConsole = "REDRIVE_TEST_RUN_CONSOLE"

func TestMain(m *testing.M) {
	if args := os.Getenv(envRunConsole); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, strings.Fields(args), os.Getenv, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "console:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
