package versions

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// rootIno is the volume's root directory (vfs.RootIno).
const rootIno = 1

// Retainer keeps retained versions for the volume's pins. Transactions
// call BeforeChange for every key they set or delete.
type Retainer struct {
	store meta.Reader // committed state, for scope walks
	mu    sync.RWMutex
	pins  []Pinned // by version, oldest first
	// releasing holds the pins this process is releasing: their records
	// stay until the last release step, and reading them again
	// (SetPins, after other hosts' commits) must not bring them back.
	releasing map[uint64]bool
	any       atomic.Bool
	scope     *lru.Cache[scopeKey, bool]
	// dirs caches, for pins whose clone excludes paths, the path of a
	// directory below the pin's root as of the pin, if the clone shows it.
	dirs     *lru.Cache[scopeKey, dirScope]
	excluder atomic.Pointer[Excluder]
}

// Pinned is a pin and its version.
type Pinned struct {
	Version uint64
	schema.Pin
}

type scopeKey struct{ pin, ino uint64 }

// NewRetainer loads the pins of store.
func NewRetainer(store meta.Reader) (*Retainer, error) {
	c, err := lru.New[scopeKey, bool](1 << 18)
	if err != nil {
		return nil, err
	}
	d, err := lru.New[scopeKey, dirScope](1 << 16)
	if err != nil {
		return nil, err
	}
	r := &Retainer{store: store, scope: c, dirs: d, releasing: map[uint64]bool{}}
	pins, err := LoadPins(store)
	if err != nil {
		return nil, err
	}
	r.pins = pins
	r.any.Store(len(pins) > 0)
	return r, nil
}

// LoadPins reads every pin record, oldest first.
func LoadPins(m meta.Reader) ([]Pinned, error) {
	it, err := m.NewIter(schema.PinRange())
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Pinned
	for it.First(); it.Valid(); it.Next() {
		v, err := schema.PinVersion(it.Key())
		if err != nil {
			return nil, err
		}
		p, err := schema.DecodePin(it.Value())
		if err != nil {
			return nil, fmt.Errorf("pin %d: %w", v, err)
		}
		out = append(out, Pinned{Version: v, Pin: p})
	}
	return out, it.Error()
}

// Pins returns the pins, oldest first.
func (r *Retainer) Pins() []Pinned {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.pins)
}

// Add starts keeping versions for a pin. The transaction that writes the
// pin record calls it before committing: transactions are serialized, so
// every later one retains.
func (r *Retainer) Add(p Pinned) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, _ := slices.BinarySearchFunc(r.pins, p.Version, cmpPin)
	r.pins = slices.Insert(slices.Clone(r.pins), i, p) // readers hold the old slice
	r.any.Store(true)
}

// SetPins replaces the pins with those read from the records again
// (other hosts made or removed some; docs/SHARED.md, 9.2), leaving out
// those this process is releasing.
func (r *Retainer) SetPins(pins []Pinned) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pins = slices.DeleteFunc(slices.Clone(pins), func(p Pinned) bool { // readers hold the old slice
		return r.releasing[p.Version]
	})
	r.any.Store(len(r.pins) > 0)
}

// SetHeld records whether the pin at version v is still read by its clone.
func (r *Retainer) SetHeld(v uint64, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := slices.BinarySearchFunc(r.pins, v, cmpPin); ok {
		p := r.pins[i] // copy: Pins handed out the old slice
		p.Held = held
		r.pins = slices.Clone(r.pins)
		r.pins[i] = p
	}
}

// Remove stops keeping versions for the pin at version v.
func (r *Retainer) Remove(v uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := slices.BinarySearchFunc(r.pins, v, cmpPin); ok {
		r.pins = slices.Delete(slices.Clone(r.pins), i, i+1)
	}
	r.any.Store(len(r.pins) > 0)
}

// StartRelease stops keeping versions for the pin at version v, which
// this process is about to release, until Released: its record stays
// while its retained versions go, and other hosts' commits must not put
// it back. Versions it would have kept go to the next older covering
// pin, which is where releasing moves them anyway.
func (r *Retainer) StartRelease(v uint64) {
	r.mu.Lock()
	r.releasing[v] = true
	r.mu.Unlock()
	r.Remove(v)
}

// Released forgets the release of the pin at version v, whose record is
// gone.
func (r *Retainer) Released(v uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.releasing, v)
}

func cmpPin(p Pinned, v uint64) int {
	switch {
	case p.Version < v:
		return -1
	case p.Version > v:
		return 1
	}
	return 0
}

// BeforeChange keeps key's current value (read through b, the changing
// transaction) as a retained version if a pin needs it, before the caller
// sets or deletes key in b. ref is told of the chunk reference a retained
// extent keeps.
func (r *Retainer) BeforeChange(b meta.Batch, key []byte, ref func(schema.Extent, int64)) error {
	if !r.any.Load() || !schema.Versioned(key) {
		return nil
	}
	pin, ok, err := r.coveringPin(schema.OwnerIno(key))
	if err != nil || !ok {
		return err
	}
	// Any version at or after the pin means key changed since the pin
	// already, and the first such version holds its value at the pin
	// (releasing a pin may have moved it to an older pin that does not
	// cover key: look for any, not just the pin's own).
	if _, kept, err := retainedAt(b, key, pin); err != nil || kept {
		return err
	}
	rk := schema.RetainedKey(key, pin)
	var rv schema.Retained
	switch old, err := b.Get(key); {
	case err == nil:
		rv = schema.Retained{Present: true, Value: old}
	case !errors.Is(err, meta.ErrNotFound):
		return err
	}
	kept := rv
	if rv.Present && key[0] == 'e' {
		// The retained copy references an owned block's bytes without
		// owning them (content/owned.go); ref learns of the extent as it
		// was, which tells it so.
		var err error
		if kept.Value, err = schema.Unowned(rv.Value); err != nil {
			return fmt.Errorf("extent %x: %w", key, err)
		}
	}
	if err := b.Set(rk, kept.Encode()); err != nil {
		return err
	}
	if err := b.Set(schema.RetainIndexKey(pin, key), nil); err != nil {
		return err
	}
	return refExtent(key, rv, ref, 1)
}

// refExtent tells ref of the chunk a retained extent references.
func refExtent(key []byte, rv schema.Retained, ref func(schema.Extent, int64), d int64) error {
	if key[0] != 'e' || !rv.Present {
		return nil
	}
	x, err := schema.DecodeExtent(rv.Value)
	if err != nil {
		return fmt.Errorf("retained extent %x: %w", key, err)
	}
	ref(x, d)
	return nil
}

// Keeps reports whether a pin covers ino, so that BeforeChange may keep
// the old values of its keys.
func (r *Retainer) Keeps(ino uint64) (bool, error) {
	if !r.any.Load() {
		return false, nil
	}
	_, ok, err := r.coveringPin(ino)
	return ok, err
}

// coveringPin is the newest pin whose subtree held ino at its version.
func (r *Retainer) coveringPin(ino uint64) (uint64, bool, error) {
	r.mu.RLock()
	pins := r.pins
	r.mu.RUnlock()
	for i := len(pins) - 1; i >= 0; i-- {
		p := pins[i]
		if ino >= p.NextIno {
			continue // born after the pin
		}
		in, err := r.inScope(p, ino)
		if err != nil {
			return 0, false, err
		}
		if in {
			return p.Version, true, nil
		}
	}
	return 0, false, nil
}
