package namespace

import (
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The back-references (schema.ParentKey): one record per name an inode
// has, so that its names are found from the inode. Code outside this file
// reads them through these functions, not the keys.

// eachName calls fn with every name ino has as r shows it, in order of
// the parent directory's inode number. The names are read before fn runs,
// so fn may change them.
func eachName(r meta.Reader, ino uint64, fn func(parent uint64, name string) error) error {
	lower, upper := schema.ParentRange(ino)
	return scan(r, lower, upper, func(k, _ []byte) error {
		_, parent, name, err := schema.ParseParentKey(k)
		if err != nil {
			return err
		}
		return fn(parent, name)
	})
}

// firstName returns one name of ino (the one in the directory with the
// lowest inode number): parent 0 if it has none.
func firstName(r meta.Reader, ino uint64) (parent uint64, name string, err error) {
	it, err := r.NewIter(schema.ParentRange(ino))
	if err != nil {
		return 0, "", err
	}
	defer it.Close()
	if !it.First() {
		return 0, "", it.Error()
	}
	_, parent, name, err = schema.ParseParentKey(it.Key())
	return parent, name, err
}

// hasName reports whether ino has a name.
func hasName(r meta.Reader, ino uint64) (bool, error) {
	lower, upper := schema.ParentRange(ino)
	return hasKey(r, lower, upper)
}

// countNames is how many names ino has.
func countNames(r meta.Reader, ino uint64) (int, error) {
	n := 0
	lower, upper := schema.ParentRange(ino)
	err := scan(r, lower, upper, func(_, _ []byte) error { n++; return nil })
	return n, err
}
