package content

import (
	"github.com/doppelfs/doppel/internal/schema"
	lru "github.com/hashicorp/golang-lru/v2"
)

// chunkCache keeps recently read chunks, decompressed and verified. Chunks
// are immutable, so an entry never goes stale: a hash always names the same
// bytes.
type chunkCache struct {
	c *lru.Cache[schema.Hash, []byte]
}

func newChunkCache(entries int) *chunkCache {
	c, _ := lru.New[schema.Hash, []byte](entries)
	return &chunkCache{c: c}
}

func (c *chunkCache) get(h schema.Hash) ([]byte, bool) { return c.c.Get(h) }
func (c *chunkCache) add(h schema.Hash, p []byte)      { c.c.Add(h, p) }
