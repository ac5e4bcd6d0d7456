package devstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Debian 12 ships RabbitMQ 3.10 only. RabbitMQ 4.0 comes from Debian 13's
// rabbitmq-server (4.0.5, with Erlang 27) installed in a Debian 13 root
// made with debootstrap, in which a node runs chrooted (RabbitOptions.Root).

const rabbitMQ4RootName = "debian13-rabbitmq4"

// RabbitMQ4Root returns a Debian 13 root with Debian's rabbitmq-server 4.0
// installed, for RabbitOptions.Root. It lives in the cache folder
// ($REDRIVE_CACHE_DIR, else $XDG_CACHE_HOME/redrive or ~/.cache/redrive)
// and is built there the first time (as root: debootstrap, then apt-get
// inside the root; about 3 min). A build in progress elsewhere is waited
// for, and a half-built root is never returned.
func RabbitMQ4Root(ctx context.Context) (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	root := filepath.Join(cache, rabbitMQ4RootName)
	if hasRabbitMQ(root) {
		return root, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("devstack: no RabbitMQ 4.0 root in %s, and building one needs root", root)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("devstack: %w", err)
	}
	// Two devstacks started at once (say make test and make demo) must not
	// build into the same folder: the second waits for the first.
	lock, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("devstack: %w", err)
	}
	defer lock.Close() // closing releases the lock
	for waited := false; ; waited = true {
		err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return "", fmt.Errorf("devstack: lock %s: %w", lock.Name(), err)
		}
		if !waited {
			fmt.Fprintf(os.Stderr, "devstack: waiting for another devstack building %s\n", root)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("devstack: waiting for %s: %w", lock.Name(), ctx.Err())
		case <-time.After(time.Second):
		}
	}
	if hasRabbitMQ(root) {
		return root, nil
	}
	if err := buildRabbitMQ4Root(ctx, root); err != nil {
		return "", err
	}
	return root, nil
}

// cacheDir is where devstack keeps what it builds once per machine.
func cacheDir() (string, error) {
	if d := os.Getenv("REDRIVE_CACHE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir() // $XDG_CACHE_HOME, else ~/.cache
	if err != nil {
		return "", fmt.Errorf("devstack: cache folder: %w", err)
	}
	return filepath.Join(d, "redrive"), nil
}

// hasRabbitMQ tells whether root holds an installed rabbitmq-server.
func hasRabbitMQ(root string) bool {
	_, err := os.Stat(filepath.Join(root, rabbitBinDir, "rabbitmq-server"))
	return err == nil
}

// buildRabbitMQ4Root builds the root in root+".tmp" and renames it to root
// when rabbitmq-server is installed, so that a build cut short is never
// taken for a root (the next build starts over).
func buildRabbitMQ4Root(ctx context.Context, root string) error {
	t0 := time.Now()
	say := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "devstack: "+format+"\n", a...) }
	fail := func(err error) error { return fmt.Errorf("devstack: building the RabbitMQ 4.0 root: %w", err) }
	say("building the Debian 13 root for RabbitMQ 4.0 (about 3 min, once) in %s", root)
	if _, err := os.Stat(root); err == nil {
		return fail(fmt.Errorf("%s exists without %s: remove it", root, rabbitBinDir+"/rabbitmq-server"))
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if err := aptInstall(ctx, "debootstrap"); err != nil {
			return fail(err)
		}
	}
	tmp := root + ".tmp"
	// Removing a root with /dev bound into it would empty the host's /dev.
	// devstack mounts nothing outside its own mount namespaces, but another
	// tool may have.
	if m := mountsUnder(tmp); len(m) > 0 {
		return fail(fmt.Errorf("%s is half-built and has mounts (%s): unmount them and remove it", tmp, strings.Join(m, ", ")))
	}
	if err := os.RemoveAll(tmp); err != nil {
		return fail(err)
	}

	mirror := debianMirror()
	say("debootstrap trixie from %s…", mirror)
	// In a mount namespace of its own, as inRoot: the /proc and /sys that
	// debootstrap mounts in the root go away with it, however it ends.
	boot := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "trixie", tmp, mirror)
	boot.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Unshareflags: syscall.CLONE_NEWNS}
	boot.Cancel = killGroup(boot)
	if _, err := run(boot); err != nil {
		return fail(err)
	}
	resolv, err := os.ReadFile("/etc/resolv.conf") // apt inside the root resolves names as the host does
	if err != nil {
		return fail(err)
	}
	_ = os.Remove(filepath.Join(tmp, "etc/resolv.conf")) // may be a symlink
	if err := os.WriteFile(filepath.Join(tmp, "etc/resolv.conf"), resolv, 0o644); err != nil {
		return fail(err)
	}
	// Package scripts must not start services in the root (rabbitmq-server
	// would start a node of its own): invoke-rc.d asks policy-rc.d first.
	if err := os.WriteFile(filepath.Join(tmp, "usr/sbin/policy-rc.d"), []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return fail(err)
	}

	say("installing rabbitmq-server in the root…")
	install := inRoot(ctx, tmp, "", "", "/bin/sh", "-c",
		"apt-get "+sandboxRoot+" update && apt-get "+sandboxRoot+" install -y rabbitmq-server")
	install.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8"}
	if _, err := run(install); err != nil {
		return fail(err)
	}
	if !hasRabbitMQ(tmp) {
		return fail(fmt.Errorf("apt-get installed no %s in %s", rabbitBinDir+"/rabbitmq-server", tmp))
	}
	if err := os.Rename(tmp, root); err != nil {
		return fail(err)
	}
	say("built the RabbitMQ 4.0 root in %s", time.Since(t0).Round(time.Second))
	return nil
}

// debianMirror is the Debian archive this machine's apt uses (the first
// URIs of a deb822 source for a main suite, such as bookworm rather than
// bookworm-security), so that the root is fetched from the same place, or
// deb.debian.org.
func debianMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, stanza := range strings.Split(string(b), "\n\n") {
			fields := map[string]string{}
			for _, line := range strings.Split(stanza, "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
					fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
				}
			}
			uris := strings.Fields(fields["uris"])
			if len(uris) == 0 || !strings.Contains(fields["types"], "deb") || strings.EqualFold(fields["enabled"], "no") {
				continue
			}
			for _, suite := range strings.Fields(fields["suites"]) {
				if !strings.Contains(suite, "-") && !strings.Contains(suite, "/") {
					return uris[0]
				}
			}
		}
	}
	return "http://deb.debian.org/debian"
}

// inRootScript mounts what a program in a root needs and runs it there:
// /proc and /dev, and, when given, a host folder at a path in the root.
// Arguments: root, host folder or "", path in the root or "", program and
// its arguments.
const inRootScript = `set -e
root=$1 dir=$2 at=$3
shift 3
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
if [ -n "$dir" ]; then
	mkdir -p "$root$at"
	mount --bind "$dir" "$root$at"
fi
exec chroot "$root" "$@"`

// inRoot returns a command that runs argv chrooted in root, with the host
// folder dir (if not "") seen at the path at inside it. It runs in a mount
// namespace of its own: its mounts are seen by its processes only and go
// away when the last of them exits, so that nodes and rabbitmqctl calls
// sharing a root never unmount each other's /proc, and a crash leaves no
// mounts behind. The command gets a process group of its own, killed
// whole when ctx ends.
func inRoot(ctx context.Context, root, dir, at string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", inRootScript, "sh", root, dir, at}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Unshareflags: syscall.CLONE_NEWNS}
	cmd.Cancel = killGroup(cmd)
	return cmd
}

// killGroup is a Cmd.Cancel for a command started with Setpgid: it kills
// the command's children too (dpkg under an interrupted apt-get would go on
// writing to a root about to be removed).
func killGroup(cmd *exec.Cmd) func() error {
	return func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// mountsUnder lists the mount points at or below dir in this process's
// mount namespace (/proc/self/mountinfo).
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent major:minor root mount-point options …; the
		// mount point escapes spaces and such as octal (\040).
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
