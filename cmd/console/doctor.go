package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"

	"github.com/redrive/redrive/configs"
	"github.com/redrive/redrive/ops/doctor"
)

// errDoctorFailed makes `console doctor` exit 1 after printing its report.
var errDoctorFailed = errors.New("doctor: some checks failed")

// doctorCommand checks every dependency of the config file without changing anything and prints
// one line per check (or the report as JSON with --json); it fails when a check failed.
func doctorCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	path := fs.String("config", "configs/console.yaml", "config file")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := configs.Load(*path, getenv)
	if err != nil {
		return err
	}
	rep := doctor.New(cfg, doctor.Adapters{}).Run(ctx)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := doctor.WriteText(stdout, rep); err != nil {
		return err
	}
	if !rep.Passed() {
		return errDoctorFailed
	}
	return nil
}
