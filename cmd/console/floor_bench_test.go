package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redrive/redrive/ops/waittest"
)

// The floors of the groups readers' benchmark: servers of one static file holding the console's
// own answer, read by the same readers on the same CPUs. What p99 / p50 they get is what this
// machine gives 8 closed-loop readers of that many bytes, whatever the server does besides.

// serveFile answers GET /groups with the file's bytes, written whole with their length: the
// standard library and nothing else (the test binary under envServeFile). It returns only when
// the listener fails.
func serveFile(addr, file string) error {
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	size := strconv.Itoa(len(body))
	return http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", size)
		_, _ = w.Write(body)
	}))
}

// startFileServer runs serveFile over file in a process of its own until the test ends; its URL
// of the file and its process.
func startFileServer(t *testing.T, file string) (url string, cmd *exec.Cmd) {
	t.Helper()
	addr := freeAddr(t)
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeFile+"="+addr+" "+file)
	url = "http://" + addr + "/groups"
	return url, startFloor(t, cmd, url)
}

// startNginx runs nginx (bin) over file, one process with one event loop, sendfile on and no
// access log, until the test ends; its URL of the file and its process.
func startNginx(t *testing.T, bin, file string) (url string, cmd *exec.Cmd) {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	conf := fmt.Sprintf(`master_process off;
daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	client_body_temp_path %[1]s;
	server {
		listen %[2]s;
		location = /groups { alias %[3]s; default_type application/json; }
	}
}
`, dir, addr, file)
	path := filepath.Join(dir, "nginx.conf")
	mustDo(t, os.WriteFile(path, []byte(conf), 0o600))
	cmd = exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", path)
	url = "http://" + addr + "/groups"
	return url, startFloor(t, cmd, url)
}

// startFloor starts cmd, kills it when the test ends and waits until url answers 200.
func startFloor(t *testing.T, cmd *exec.Cmd, url string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "floor.log"))
	mustDo(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	mustDo(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s's log:\n%s", filepath.Base(cmd.Path), tail(readFile(log.Name()), 2000))
		}
	})
	waittest.Until(t, 30*time.Second, filepath.Base(cmd.Path)+" serves the answer", func() bool {
		return doRaw("GET", url, "", "").status == http.StatusOK
	})
	return cmd
}
