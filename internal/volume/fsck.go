package volume

import (
	"context"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/ops"
)

// FsckStores are the stores fsck reads.
func (v *Volume) FsckStores() fsck.Stores {
	return fsck.Stores{Dir: v.Dir, Meta: v.Meta, Blobs: v.Blobs}
}

// Fsck checks the volume while it is in use (doppel fsck of a mounted
// volume), or repairs what can be repaired online with req.Repair.
func (v *Volume) Fsck(ctx context.Context, req ops.FsckRequest, progress func(fsck.Progress)) (ops.FsckResult, error) {
	opt := fsck.Options{VerifyData: req.VerifyData, Progress: progress}
	if req.Repair {
		rr, err := fsck.RepairLive(ctx, v.FsckStores(), v.Engine, opt)
		return ops.FsckResult{Repair: rr}, err
	}
	rep, err := fsck.CheckLive(ctx, v.FsckStores(), v.Engine, opt)
	return ops.FsckResult{Report: rep}, err
}
