package namespace

import (
	"fmt"
	"testing"
)

// DebugPins describes the pins, for failing tests.
func (v *FS) DebugPins() string {
	s := ""
	for _, p := range v.ret.Pins() {
		rec, _ := loadPin(v.meta, p.Version)
		s += fmt.Sprintf("[v%d root %d next %d held %v deps %v dependents %d] ", p.Version, p.Root, p.NextIno, rec.Held, rec.Deps, rec.Dependents)
	}
	return s
}

// SetJournalKeep changes how many versions the pruner keeps regardless.
func (v *FS) SetJournalKeep(n uint64) {
	v.pruneMu.Lock()
	if n == 0 {
		n = defaultJournalKeep
	}
	v.opt.JournalKeep = n
	v.pruneMu.Unlock()
}

// CheckTreeCache makes every answer of the journal's tree cache checked
// against a walk until t ends.
func CheckTreeCache(t testing.TB) {
	checkTreeCache.Store(true)
	t.Cleanup(func() { checkTreeCache.Store(false) })
}

// OnMaterialized makes fn run once each clone's tree is materialized,
// before the transaction that ends its materialization, until t ends.
func OnMaterialized(t testing.TB, fn func(c uint64)) {
	materializedHook.Store(&fn)
	t.Cleanup(func() { materializedHook.Store(nil) })
}

// OnReap makes fn run when the reaper has listed what it frees next below
// a removed clone's root (n entries; none: the root itself), before the
// transaction that frees it, until t ends.
func OnReap(t testing.TB, fn func(root uint64, n int)) {
	reapHook.Store(&fn)
	t.Cleanup(func() { reapHook.Store(nil) })
}

// OnDiffSnapshot makes fn run once a diff has taken its snapshot, until
// t ends.
func OnDiffSnapshot(t testing.TB, fn func()) {
	diffSnapshotHook.Store(&fn)
	t.Cleanup(func() { diffSnapshotHook.Store(nil) })
}

// MaterializeNow materializes stub ino at once, as the background
// materializer's walk does.
func (v *FS) MaterializeNow(ino uint64) error { return v.materializeMany([]uint64{ino}, true) }

// RemoveOrphan runs the orphan reaper's step for ino, as for a list read
// before ino was deleted.
func (v *FS) RemoveOrphan(ino uint64) error { return v.removeOrphan(ino) }
