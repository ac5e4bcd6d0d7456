package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redrive/redrive/ops/waittest"
)

// Twenty people opening the same dead-letter page at the same instant cost the cluster one read:
// while the first read's fetch is held at the broker, the others join it and no other consumer
// fetches; all twenty get the page; a reader who gives up stops waiting without failing the
// others; and nothing is kept: the next read, once this one is done, reads again and sees a
// record written since.
func TestConcurrentReadsOfAPageShareOneRead(t *testing.T) {
	newest50 := span(119, 70, -1)
	for _, tc := range []struct {
		name string
		// read answers what a reader is shown, as numbers: the page's offsets, the scan's count.
		read func(context.Context, *Cluster) ([]int64, error)
		want []int64 // before the record written after the reads
		// after says whether a read after the reads shows the record written since (offset 120).
		after func([]int64) bool
	}{
		{"OnePartition", func(ctx context.Context, c *Cluster) ([]int64, error) {
			p, err := c.Records(ctx, RecordQuery{Topic: "orders.DLT", Partition: 0, Limit: 50})
			return offsets(p), err
		}, newest50, func(o []int64) bool { return len(o) > 0 && o[0] == 120 }},
		{"AcrossPartitions", func(ctx context.Context, c *Cluster) ([]int64, error) {
			p, err := c.RecordsAcross(ctx, AcrossQuery{Topic: "orders.DLT", Limit: 50})
			return offsets(Page{Records: p.Records}), err
		}, newest50, func(o []int64) bool { return len(o) > 0 && o[0] == 120 }},
		{"ErrorGroups", func(ctx context.Context, c *Cluster) ([]int64, error) {
			s, err := c.ErrorGroups(ctx, "orders.DLT", 0)
			return []int64{s.Scanned}, err
		}, []int64{100}, func(o []int64) bool { return len(o) == 1 && o[0] == 101 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := browseFixture(t) // partition 0 holds [20, 120)
			release := make(chan struct{})
			// A consumer's first fetch opens a fetch session (epoch 0): these count the consumers
			// the reads make. (A read's probes are sessionless, epoch -1.)
			var fetches atomic.Int64
			f.broker.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
				f.broker.KeepControl()
				if r.(*kmsg.FetchRequest).SessionEpoch != 0 {
					return nil, nil, false
				}
				if fetches.Add(1) == 1 {
					f.broker.SleepControl(func() { <-release }) // the first read's first fetch waits
				}
				return nil, nil, false
			})
			released := sync.OnceFunc(func() { close(release) })
			t.Cleanup(released)

			type answer struct {
				offs []int64
				err  error
			}
			const n = 20
			answers := make([]chan answer, n)
			ask := func(ctx context.Context, i int) {
				answers[i] = make(chan answer, 1)
				go func() {
					offs, err := tc.read(ctx, f.c)
					answers[i] <- answer{offs, err}
				}()
			}
			ctx := ctxT(t)
			ask(ctx, 0)
			waittest.Until(t, 10*time.Second, "the first read's consumer at the broker", func() bool { return fetches.Load() == 1 })
			for i := 1; i < n; i++ {
				ask(ctx, i)
			}
			quitter, quit := context.WithCancel(ctx)
			gaveUp := make(chan error, 1)
			go func() { _, err := tc.read(quitter, f.c); gaveUp <- err }()
			// Unshared, each of them would make a consumer and fetch within this time.
			waittest.Holds(t, time.Second, "one consumer while the first read is held (concurrent reads of one page share it)",
				func() bool { return fetches.Load() == 1 })
			quit()
			select {
			case err := <-gaveUp:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the reader who gave up got %v, want context.Canceled", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("a reader whose context ended kept waiting for the shared read")
			}
			released()
			for i, ch := range answers {
				a := <-ch
				if a.err != nil || !eqOffsets(a.offs, tc.want) {
					t.Errorf("reader %d: %v %v, want %v", i, a.err, a.offs, tc.want)
				}
			}
			// Nothing is kept: a read after these reads the partition again.
			f.produce(t, &kgo.Record{Topic: "orders.DLT", Partition: 0, Value: []byte(`{"messageId":"m-120"}`)})
			before := fetches.Load()
			if offs, err := tc.read(ctx, f.c); err != nil || !tc.after(offs) {
				t.Errorf("the read after: %v %v; want it to show offset 120, the record written since", err, offs)
			}
			if fetches.Load() == before {
				t.Error("the read after made no consumer: a finished read was kept")
			}
		})
	}
}
