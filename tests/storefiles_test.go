package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/schema"
	dvolume "github.com/doppelfs/doppel/internal/volume"
)

// Reading and damaging the files of an unmounted store, for the tests of
// damage and of bad input.

// located is a chunk of a file with where it sits in the file.
type located struct {
	schema.Chunk
	fileOff int64
	Length  uint32 // bytes of the file it maps
	hashHex string
}

// chunkInMiddle returns the chunk of the file's middle extent, read from
// the metadata store of the unmounted volume.
func (d *damageFixture) chunkInMiddle(t *testing.T, name string) located {
	t.Helper()
	var out []located
	d.readMeta(t, func(m meta.Store) error {
		it, err := m.NewIter(schema.ExtentRange(d.ino[name]))
		if err != nil {
			return err
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			off, err := schema.ExtentOffset(it.Key())
			if err != nil {
				return err
			}
			x, err := schema.DecodeExtent(it.Value())
			if err != nil {
				return err
			}
			raw, err := m.Get(schema.ChunkKey(x.Hash))
			if err != nil {
				return err
			}
			c, err := schema.DecodeChunk(raw)
			if err != nil {
				return err
			}
			out = append(out, located{Chunk: c, fileOff: off, Length: x.Length, hashHex: fmt.Sprintf("%x", x.Hash[:])})
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("%s has no extents", name)
	}
	return out[len(out)/2]
}

// firstExtentKey returns the key of the file's first extent record.
func (d *damageFixture) firstExtentKey(t *testing.T, name string) []byte {
	t.Helper()
	var key []byte
	d.readMeta(t, func(m meta.Store) error {
		it, err := m.NewIter(schema.ExtentRange(d.ino[name]))
		if err != nil {
			return err
		}
		defer it.Close()
		if !it.First() {
			return fmt.Errorf("%s has no extents", name)
		}
		key = append([]byte(nil), it.Key()...)
		return nil
	})
	return key
}

func (d *damageFixture) readMeta(t *testing.T, fn func(meta.Store) error) {
	t.Helper()
	readStoreMeta(t, d.v.Store, fn)
}

func (d *damageFixture) editMeta(t *testing.T, fn func(meta.Batch) error) {
	t.Helper()
	editStoreMeta(t, d.v.Store, fn)
}

func (d *damageFixture) segmentPath(num uint32) string {
	return filepath.Join(d.v.Store, "chunks", segName(num))
}

// readStoreMeta opens an unmounted store's metadata store through the
// meta API, as the daemon does, and runs fn on it: the Pebble store of an
// embedded volume, the PostgreSQL schema of a shared one.
func readStoreMeta(t *testing.T, store string, fn func(meta.Store) error) {
	t.Helper()
	m := openStoreMeta(t, store)
	err := fn(m)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// openStoreMeta opens the metadata store of the unmounted volume in store,
// whatever its kind. It reads the store's files itself rather than going
// through volume.OpenForCheck, which refuses a volume of a newer format:
// the tests that set the format must be able to set it back.
func openStoreMeta(t *testing.T, store string) meta.Store {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(store, dvolume.SharedFile))
	if errors.Is(err, os.ErrNotExist) {
		m, err := meta.OpenPebble(filepath.Join(store, "meta"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	} else if err != nil {
		t.Fatal(err)
	}
	var shared struct{ Meta, Schema string }
	if err := json.Unmarshal(raw, &shared); err != nil {
		t.Fatalf("%s: %v", dvolume.SharedFile, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := pgstore.Open(ctx, pgstore.Options{URL: shared.Meta, Schema: shared.Schema})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// editStoreMeta commits one batch of changes to an unmounted store's
// metadata store.
func editStoreMeta(t *testing.T, store string, fn func(meta.Batch) error) {
	t.Helper()
	readStoreMeta(t, store, func(m meta.Store) error {
		b := m.NewBatch()
		defer b.Close()
		if err := fn(b); err != nil {
			return err
		}
		return b.Commit(true)
	})
}

func segName(num uint32) string { return fmt.Sprintf("seg-%08x", num) }

// flipBit inverts one bit of the file at off.
func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
