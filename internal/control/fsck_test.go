package control

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/fsck"
)

func TestFsckStreamsProgressThenResult(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 0 // stream every progress call
	dir := t.TempDir()
	var asked []FsckRequest
	stop, err := Serve(context.Background(), dir, fakeVolume{
		fsck: func(ctx context.Context, req FsckRequest, progress func(fsck.Progress)) (FsckResult, error) {
			asked = append(asked, req)
			if req.Repair {
				return FsckResult{}, fmt.Errorf("repair refused: %w", syscall.EBUSY)
			}
			for i := range 3 {
				progress(fsck.Progress{Phase: fsck.PhaseChunks, Done: int64(i), Total: 2})
			}
			return FsckResult{Report: &fsck.Report{Inodes: 7, Problems: []fsck.Problem{{Kind: fsck.KindNlink, Path: "/x"}}}}, nil
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	res, err := c.Fsck(context.Background(), FsckRequest{VerifyData: true}, func(p fsck.Progress) { seen = append(seen, p.Done) })
	if err != nil || res.Report == nil || res.Report.Inodes != 7 || len(res.Report.Problems) != 1 || res.Report.Problems[0].Path != "/x" {
		t.Fatalf("Fsck = %+v, %v", res, err)
	}
	if len(seen) != 3 || seen[2] != 2 || !asked[0].VerifyData {
		t.Fatalf("progress seen %v, request %+v", seen, asked[0])
	}
	// A failure after the reply started still arrives as an error, errno
	// included.
	if _, err := c.Fsck(context.Background(), FsckRequest{Repair: true}, nil); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("a failed repair: %v, want EBUSY", err)
	}
}

// TestStopEndsRunningFsck: stopping the server cancels a check under way
// and waits for it, so that the daemon closes no volume under a check.
func TestStopEndsRunningFsck(t *testing.T) {
	dir := t.TempDir()
	started, ended := make(chan struct{}), make(chan struct{})
	stop, err := Serve(context.Background(), dir, fakeVolume{
		fsck: func(ctx context.Context, req FsckRequest, progress func(fsck.Progress)) (FsckResult, error) {
			close(started)
			<-ctx.Done()
			close(ended)
			return FsckResult{}, ctx.Err()
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Fsck(context.Background(), FsckRequest{}, nil)
		errc <- err
	}()
	<-started
	stop()
	select {
	case <-ended:
	default:
		t.Fatal("stop returned while the check was still running")
	}
	if err := <-errc; err == nil {
		t.Fatal("a check cut short by stop reported success")
	}
}
