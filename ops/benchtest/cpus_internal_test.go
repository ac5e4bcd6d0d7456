package benchtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUList(t *testing.T) {
	for list, want := range map[string]string{"0": "0", "1,3": "1,3", "0-2": "0,1,2", " 0 , 4-5": "0,4,5"} {
		got, err := parseCPUList(list)
		if err != nil || CPUList(got) != want {
			t.Errorf("parseCPUList(%q) = %s, %v; want %s", list, CPUList(got), err, want)
		}
	}
	for _, bad := range []string{"", "a", "2-1", "-1", "0,,1", "1-", "5000"} {
		if got, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) = %s; want an error", bad, CPUList(got))
		}
	}
}

// TestPinRestores pins this process's threads to one of its CPUs and checks that each is pinned,
// then, once the pinning test has ended, that each has its own affinity back.
func TestPinRestores(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	affinities := func() map[int]unix.CPUSet {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", os.Getpid()))
		out := map[int]unix.CPUSet{}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(task))
			var set unix.CPUSet
			if unix.SchedGetaffinity(tid, &set) == nil {
				out[tid] = set
			}
		}
		return out
	}
	before := affinities()
	var one unix.CPUSet
	for c := range 1024 {
		if mine.IsSet(c) {
			one.Set(c)
			break
		}
	}
	t.Run("pinned", func(t *testing.T) {
		Pin(t, one, os.Getpid())
		for tid, set := range affinities() {
			if _, old := before[tid]; old && set != one {
				t.Errorf("thread %d on CPUs %s; want %s", tid, CPUList(set), CPUList(one))
			}
		}
	})
	after := affinities()
	for tid, was := range before {
		if now, ok := after[tid]; ok && now != was {
			t.Errorf("thread %d on CPUs %s after the test; want %s back", tid, CPUList(now), CPUList(was))
		}
	}
}

func TestParentAndChildren(t *testing.T) {
	me, parent := os.Getpid(), os.Getppid()
	if got := Parent(me); got != parent {
		t.Fatalf("Parent(%d) = %d; want %d", me, got, parent)
	}
	if kids := Children(parent); !slices.Contains(kids, me) {
		t.Fatalf("Children(%d) = %v; want %d among them", parent, kids, me)
	}
	if got := Parent(1 << 30); got != 0 {
		t.Fatalf("Parent of a process that does not exist = %d; want 0", got)
	}
}
