package s3store

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// BenchmarkPutPacks uploads packs of 1, 4 (the default PackSize) and 16
// MiB four at a time, as a streaming write's uploads do (Config.Uploads),
// from a pack's mapping, and reports the CPU both sides spent per MiB:
// the client's (this process) and the S3 server's.
func BenchmarkPutPacks(b *testing.B) {
	srv := s3test.Start(b)
	for _, mib := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) { benchPuts(b, srv, mib<<20) })
	}
}

func benchPuts(b *testing.B, srv *s3test.Server, size int) {
	cfg := testConfig(b, srv, "bench")
	o := newObjects(cfg)
	m := newPackMem(size)
	defer m.release()
	data := append(m.data, testutil.RandBytes(rand.New(rand.NewPCG(1, 1)), size)...)
	crc := crc32.Checksum(data, castagnoli)
	var next atomic.Int64
	b.SetBytes(int64(len(data)))
	clientCPU, serverCPU := testutil.ProcessCPUSeconds(os.Getpid()), srv.CPUSeconds()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				if err := o.put(uint32(n), data, crc); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	mib := float64(b.N) * float64(size) / (1 << 20)
	b.ReportMetric((testutil.ProcessCPUSeconds(os.Getpid())-clientCPU)*1e3/mib, "client-ms/MiB")
	b.ReportMetric((srv.CPUSeconds()-serverCPU)*1e3/mib, "server-ms/MiB")
}
