package ops

import "github.com/doppelfs/doppel/internal/fsck"

// FsckRequest asks to check (and repair) the volume.
type FsckRequest struct {
	VerifyData bool `json:"verify_data"`
	Repair     bool `json:"repair"`
}

// FsckResult is the outcome: Report for a check, Repair for a repair.
type FsckResult struct {
	Report *fsck.Report       `json:"report,omitempty"`
	Repair *fsck.RepairReport `json:"repair,omitempty"`
}
