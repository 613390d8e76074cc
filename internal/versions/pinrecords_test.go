package versions

import (
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// fakeTx is a batch with abort hooks, as content.Tx has them.
type fakeTx struct {
	b       meta.Batch
	aborted []func()
}

func (f *fakeTx) Batch() meta.Batch { return f.b }
func (f *fakeTx) OnAbort(fn func()) { f.aborted = append(f.aborted, fn) }

func (f *fakeTx) abort() {
	f.b.Close()
	for _, fn := range f.aborted {
		fn()
	}
}

// TestPinRecordsFollowTheirTransaction: a pin added or unheld in a
// transaction that aborts leaves neither its record nor the retainer's
// memory changed; one that commits changes both.
func TestPinRecordsFollowTheirTransaction(t *testing.T) {
	m := openMem(t)
	r := testutil.Must(NewRetainer(m))
	tx := &fakeTx{b: m.NewBatch()}
	testutil.Check(t, r.AddPin(tx, 7, schema.Pin{Root: 1, Held: true}))
	if len(r.Pins()) != 1 {
		t.Fatalf("pins while the transaction runs: %v", r.Pins())
	}
	tx.abort()
	if len(r.Pins()) != 0 {
		t.Fatalf("pins after an abort: %v", r.Pins())
	}
	if _, err := LoadPin(m, 7); err == nil {
		t.Fatal("an aborted pin has a record")
	}

	tx = &fakeTx{b: m.NewBatch()}
	testutil.Check(t, r.AddPin(tx, 7, schema.Pin{Root: 1, Held: true}))
	testutil.Check(t, tx.b.Commit(false))
	tx = &fakeTx{b: m.NewBatch()}
	p, found, err := r.Unhold(tx, 7)
	if err != nil || !found || p.Held || r.Pins()[0].Pin.Held {
		t.Fatalf("Unhold: %+v %v %v; in memory %+v", p, found, err, r.Pins())
	}
	tx.abort()
	if !r.Pins()[0].Pin.Held || !testutil.Must(LoadPin(m, 7)).Held {
		t.Fatalf("an aborted unhold changed the pin: memory %+v", r.Pins())
	}
	if _, found, err := r.Unhold(&fakeTx{b: m.NewBatch()}, 99); found || err != nil {
		t.Fatalf("Unhold of a missing pin: %v %v", found, err)
	}
}

// TestReleasingPinStaysOut: a pin this process is releasing keeps its
// record until the last release step, so reading the pins again (after
// other hosts' commits) finds it; it must not come back, or this
// process would retain versions for it after its record is gone (fsck:
// "retained version ... for pin N, which does not exist").
func TestReleasingPinStaysOut(t *testing.T) {
	m := openMem(t)
	r := testutil.Must(NewRetainer(m))
	tx := &fakeTx{b: m.NewBatch()}
	testutil.Check(t, r.AddPin(tx, 5, schema.Pin{Root: 1, NextIno: 100}))
	testutil.Check(t, r.AddPin(tx, 7, schema.Pin{Root: 1, NextIno: 100}))
	testutil.Check(t, tx.b.Commit(false))

	r.StartRelease(7)
	r.SetPins(testutil.Must(LoadPins(m)))
	if pins := r.Pins(); len(pins) != 1 || pins[0].Version != 5 {
		t.Fatalf("pins read again while 7 is released: %+v", pins)
	}
	if v, ok, err := r.coveringPin(1); err != nil || !ok || v != 5 {
		t.Fatalf("covering pin while 7 is released: %d %v %v", v, ok, err)
	}
	r.Released(7)
	r.SetPins(testutil.Must(LoadPins(m)))
	if len(r.Pins()) != 2 {
		t.Fatalf("a pin whose release ended (record kept) is left out: %+v", r.Pins())
	}
}
