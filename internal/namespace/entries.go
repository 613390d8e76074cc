package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The directory entries (schema.DirentKey), and the pair an entry makes
// with its inode's back-reference (backrefs.go). Code outside this file
// and ReadDir's paging reads and writes them through these functions.

// readEntry reads entry name of directory dir as r shows it; found is
// false if there is none. It does not look at whether dir is a stub
// (lookupEntry does).
func readEntry(r meta.Reader, dir uint64, name string) (d schema.Dirent, found bool, err error) {
	raw, err := r.Get(schema.DirentKey(dir, name))
	if errors.Is(err, meta.ErrNotFound) {
		return schema.Dirent{}, false, nil
	}
	if err != nil {
		return schema.Dirent{}, false, err
	}
	d, err = decodeDirent(dir, name, raw)
	return d, err == nil, err
}

// eachEntry calls fn with every entry of directory dir as r shows it, in
// name order. The entries are read before fn runs, so fn may change them.
func eachEntry(r meta.Reader, dir uint64, fn func(name string, d schema.Dirent) error) error {
	lower, upper := schema.DirentRange(dir)
	return scan(r, lower, upper, func(k, val []byte) error {
		name, err := schema.DirentName(k)
		if err != nil {
			return err
		}
		d, err := decodeDirent(dir, name, val)
		if err != nil {
			return err
		}
		return fn(name, d)
	})
}

// hasEntries reports whether directory dir has an entry of its own.
func hasEntries(r meta.Reader, dir uint64) (bool, error) {
	lower, upper := schema.DirentRange(dir)
	return hasKey(r, lower, upper)
}

// setName makes name in dir name d.Ino: the entry and its back-reference.
func setName(b meta.Batch, dir uint64, name string, d schema.Dirent) error {
	if err := b.Set(schema.DirentKey(dir, name), d.Encode()); err != nil {
		return err
	}
	return b.Set(schema.ParentKey(d.Ino, dir, name), nil)
}

// dropName deletes name in dir, which names ino, and its back-reference.
func dropName(b meta.Batch, dir uint64, name string, ino uint64) error {
	if err := b.Delete(schema.DirentKey(dir, name)); err != nil {
		return err
	}
	return b.Delete(schema.ParentKey(ino, dir, name))
}
