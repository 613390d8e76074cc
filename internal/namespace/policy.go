package namespace

import (
	"syscall"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/vfs"
)

// PolicyXattr overrides the volume's chunking policy for a file, or, on a
// directory, for everything created below it afterwards (e.g. fixed:4K for
// VM images). It changes how future writes are cut, never stored data.
const PolicyXattr = vfs.ChunkingXattr

// checkPolicyXattr validates a value for PolicyXattr.
func checkPolicyXattr(value []byte) error {
	if _, err := chunker.ParsePolicy(string(value)); err != nil {
		return syscall.EINVAL
	}
	return nil
}

// inheritPolicy copies dir's chunking override to a new child and
// returns it (nil: none).
func inheritPolicy(tx *content.Tx, dir, child uint64) ([]byte, error) {
	v, found, err := readXattr(tx.Batch(), dir, PolicyXattr)
	if err != nil || !found {
		return nil, err
	}
	return v, setXattr(tx.Batch(), child, PolicyXattr, v)
}

// fileChunker returns the chunker for ino's writes: its override, or nil
// for the volume default.
func (v *FS) fileChunker(ino uint64) chunker.Chunker {
	val, found, err := readXattr(v.meta, ino, PolicyXattr)
	if err != nil || !found {
		return nil
	}
	return policyChunker(val)
}

// policyChunker returns the chunker of a PolicyXattr value, or nil (the
// volume default) for none or a bad one.
func policyChunker(val []byte) chunker.Chunker {
	if val == nil {
		return nil
	}
	p, err := chunker.ParsePolicy(string(val))
	if err != nil {
		return nil
	}
	ch, err := chunker.New(p)
	if err != nil {
		return nil
	}
	return ch
}

// chunkerOf returns the chunker for f's writes. The caller holds f's lock.
func (v *FS) chunkerOf(f *openFile) chunker.Chunker {
	if f.chunker != nil {
		return f.chunker
	}
	return v.eng.Chunker()
}
