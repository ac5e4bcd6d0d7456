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

// envServeFile makes the test binary a bare net/http server of one file ("addr file"): the naive
// floor of the groups readers' benchmark (TestGroupsReadersDuringResamples), the same bytes as the
// console's answer written whole by the standard library and nothing else.
const envServeFile = "REDRIVE_TEST_SERVE_FILE"

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
	if args := strings.Fields(os.Getenv(envServeFile)); len(args) == 2 {
		fmt.Fprintln(os.Stderr, serveFile(args[0], args[1]))
		os.Exit(1)
	}
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
