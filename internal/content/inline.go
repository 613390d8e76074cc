package content

import (
	"github.com/doppelfs/doppel/internal/blob"
)

// SharedInlineMax is the InlineMax of shared volumes: chunks smaller than
// one blob.Align. Such a chunk would take a whole aligned 4 KiB slot of a
// pack anyway, and on a metadata store whose every commit is durable,
// storing it in the blob store costs a data sync (an upload to S3, an
// fsync of a segment) before the commit that names it; inline, the
// commit alone makes it durable (docs/SHARED.md, "Small chunks inline").
// Chunks of a whole 4 KiB stay out: the fixed 4 KiB blocks of a block
// export or a VM image would otherwise all be PostgreSQL rows.
const SharedInlineMax = blob.Align - 1

// inlines reports whether a new chunk of n raw bytes goes into its record
// rather than the blob store.
func (e *Engine) inlines(n int) bool { return n <= e.cfg.InlineMax }

// storeInline keeps p's stored bytes (compressed as the volume says) to
// be written into its chunk record by the transaction that adopts it.
// Nothing reaches the blob store, so there is nothing to free if p ends
// up unused, and nothing to sync before the commit.
func (e *Engine) storeInline(p *Prepared) {
	stored, comp := e.comp.compress(p.data)
	p.inline, p.comp = append([]byte{}, stored...), comp // p.data is the caller's buffer
}

// hasBytes reports whether this copy of the chunk holds its bytes
// somewhere a record can name: stored by this Prepare, or inline.
func (p *Prepared) hasBytes() bool { return p.written || p.inline != nil }
