package filelock

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// cells is the model's file: byte positions 0..cells-2, and a last cell
// that stands for everything from cells-1 to MaxEnd.
const cells = 41

// modelOwner is what one owner holds, byte by byte (-1: nothing).
type modelOwner [cells]int

func span(l Lock) (lo, hi int) {
	if l.End == MaxEnd {
		return int(l.Start), cells - 1
	}
	return int(l.Start), int(l.End)
}

func randomLock(r *rand.Rand) Lock {
	start := uint64(r.IntN(cells))
	var end uint64
	if start == cells-1 || r.IntN(4) == 0 {
		end = MaxEnd
	} else {
		end = start + uint64(r.IntN(cells-1-int(start)))
	}
	return Lock{Start: start, End: end, Type: uint32(r.IntN(3)), Pid: uint32(r.IntN(100))}
}

// TestApplyModel runs random lock and unlock requests of three owners
// against a byte-by-byte model: conflicts, and what each owner holds
// after, must agree; held lists stay sorted, disjoint and joined.
func TestApplyModel(t *testing.T) {
	r := testutil.Rand(t)
	const owners = 3
	var model [owners]modelOwner
	for i := range model {
		for c := range model[i] {
			model[i][c] = -1
		}
	}
	held := make([][]Lock, owners)
	for step := 0; step < 20000; step++ {
		o, req := r.IntN(owners), randomLock(r)
		lo, hi := span(req)
		wantConflict := false
		for other := range model {
			if other == o || req.Type == Unlock {
				continue
			}
			for c := lo; c <= hi; c++ {
				if h := model[other][c]; h >= 0 && (h == Write || req.Type == Write) {
					wantConflict = true
				}
			}
		}
		var others []Lock
		for other := range held {
			if other != o {
				others = append(others, held[other]...)
			}
		}
		c, got := FirstConflict(others, req)
		if got != wantConflict {
			t.Fatalf("step %d: owner %d %+v: conflict %v (%+v), model says %v", step, o, req, got, c, wantConflict)
		}
		if got && !Conflicts(c, req) {
			t.Fatalf("step %d: reported conflict %+v does not conflict with %+v", step, c, req)
		}
		if got {
			continue
		}
		held[o] = Apply(held[o], req)
		for c := lo; c <= hi; c++ {
			model[o][c] = -1
			if req.Type != Unlock {
				model[o][c] = int(req.Type)
			}
		}
		checkHeld(t, step, held[o], model[o])
	}
}

func checkHeld(t *testing.T, step int, ls []Lock, m modelOwner) {
	t.Helper()
	var got modelOwner
	for c := range got {
		got[c] = -1
	}
	for i, l := range ls {
		if !l.Valid() || l.Type == Unlock {
			t.Fatalf("step %d: invalid held lock %+v", step, l)
		}
		if i > 0 {
			p := ls[i-1]
			if p.End >= l.Start {
				t.Fatalf("step %d: held locks overlap or are unsorted: %+v", step, ls)
			}
			if p.End+1 == l.Start && p.Type == l.Type {
				t.Fatalf("step %d: neighbours of one type not joined: %+v", step, ls)
			}
		}
		lo, hi := span(l)
		for c := lo; c <= hi; c++ {
			got[c] = int(l.Type)
		}
	}
	if got != m {
		t.Fatalf("step %d: held %+v\n got %v\nwant %v", step, ls, got, m)
	}
	back, err := Decode(Encode(ls))
	if err != nil || len(back) != len(ls) {
		t.Fatalf("step %d: codec: %v %+v", step, err, back)
	}
	for i := range ls {
		if back[i] != ls[i] {
			t.Fatalf("step %d: codec changed %+v to %+v", step, ls[i], back[i])
		}
	}
}

func TestSplitAndWholeFile(t *testing.T) {
	own := Apply(nil, Lock{Start: 0, End: MaxEnd, Type: Write})
	own = Apply(own, Lock{Start: 10, End: 19, Type: Unlock})
	want := []Lock{{Start: 0, End: 9, Type: Write}, {Start: 20, End: MaxEnd, Type: Write}}
	if len(own) != 2 || own[0] != want[0] || own[1] != want[1] {
		t.Fatalf("unlock in the middle: %+v, want %+v", own, want)
	}
	own = Apply(own, Lock{Start: 5, End: 25, Type: Read})
	if len(own) != 3 || own[1].Type != Read || own[1].Start != 5 || own[1].End != 25 {
		t.Fatalf("conversion: %+v", own)
	}
	if own = Apply(own, Lock{Start: 0, End: MaxEnd, Type: Unlock}); len(own) != 0 {
		t.Fatalf("unlock of all: %+v", own)
	}
	if (Lock{Start: 2, End: 1, Type: Read}).Valid() || (Lock{End: MaxEnd + 1, Type: Read}).Valid() || (Lock{Type: 7}).Valid() {
		t.Fatal("invalid requests pass Valid")
	}
}
