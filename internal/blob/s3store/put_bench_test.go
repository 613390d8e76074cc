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
// from heap memory or from a memfd (sent with sendfile, as the store's
// packs are), and reports the CPU both sides spent per MiB: the client's
// (this process) and the S3 server's.
func BenchmarkPutPacks(b *testing.B) {
	srv := s3test.Start(b)
	for _, mib := range []int{1, 4, 16} {
		for _, memfd := range []bool{false, true} {
			name := fmt.Sprintf("%dMiB/heap", mib)
			if memfd {
				name = fmt.Sprintf("%dMiB/memfd", mib)
			}
			b.Run(name, func(b *testing.B) { benchPuts(b, srv, mib<<20, memfd) })
		}
	}
}

func benchPuts(b *testing.B, srv *s3test.Server, size int, memfd bool) {
	cfg := testConfig(b, srv, "bench")
	o := newObjects(cfg)
	data := testutil.RandBytes(rand.New(rand.NewPCG(1, 1)), size)
	crc := crc32.Checksum(data, castagnoli)
	var files [4]*os.File // one per uploader: sendfile moves the file's offset
	if memfd {
		for i := range files {
			m := newMappedPackMem(size)
			if m == nil {
				b.Skip("no memfd here")
			}
			defer m.release()
			copy(m.data[:size], data)
			files[i] = m.file
		}
	}
	var next atomic.Int64
	b.SetBytes(int64(len(data)))
	clientCPU, serverCPU := testutil.ProcessCPUSeconds(os.Getpid()), srv.CPUSeconds()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				if err := o.put(uint32(n), data, files[w], crc); err != nil {
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
