package content

import "github.com/doppelfs/doppel/internal/blob"

// CommitChunks is the write path's one step from cut chunks to committed
// metadata: it stores chunks, begins a transaction that owns them, runs
// fill (which writes the extents and records naming them) and commits.
// The chunks' bytes are in the store before any metadata naming them can
// commit (ordered mode), and a failure at any stage frees whatever was
// stored for nothing. before, if not nil, runs between storing and
// beginning: callers take their inode locks there, as locks come before a
// transaction (and release them once CommitChunks returned), or wait for
// an earlier commit; if it fails, nothing is committed.
//
// Where every commit is durable, the chunks' bytes are made durable
// before the transaction begins, so that a writer waiting for its uploads
// does not hold the transaction lock against everyone else, and one whose
// next chunks are being stored meanwhile overlaps the two.
func (e *Engine) CommitChunks(chunks []*Prepared, before func() error, fill func(tx *Tx) error) error {
	return e.CommitChunksInTurn(chunks, StoreTurn{}, before, fill)
}

// StoreTurn puts the stores of successive commits of one writer in line,
// while the rest of each commit (waiting for its uploads, the
// transaction) overlaps the next one's store: a sequential writer's
// chunks then lie in the blob store in file order, and a reader's ranged
// reads of a pack (an S3 volume's prefetch) follow the file. Stored side
// by side, two commits' groups of chunks would alternate in the packs.
type StoreTurn struct {
	After <-chan struct{} // closed once the commit before has stored its chunks; nil: none
	// Loan, if not nil, is the memory the chunks were cut from: the blob
	// store may upload them from it (blob.Lender).
	Loan *Loan
	Done chan<- struct{} // closed once this commit's store ended, stored or not; nil: none
}

// CommitChunksInTurn is CommitChunks whose store waits for its turn.
func (e *Engine) CommitChunksInTurn(chunks []*Prepared, turn StoreTurn, before func() error, fill func(tx *Tx) error) error {
	if turn.After != nil {
		<-turn.After
	}
	err := e.storeLent(chunks, turn.Loan)
	if turn.Done != nil {
		close(turn.Done)
	}
	if err != nil {
		return err
	}
	if e.durableCommits {
		if err := e.syncStored(chunks); err != nil {
			e.Discard(chunks)
			return err
		}
	}
	if before != nil {
		if err := before(); err != nil {
			e.Discard(chunks)
			return err
		}
	}
	tx, err := e.Begin()
	if err != nil {
		e.Discard(chunks)
		return err
	}
	tx.Adopt(chunks)
	if err := fill(tx); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}

// syncStored makes the bytes of the chunks this engine stored durable:
// only their own locations where the store can (blob.LocSyncer), else
// everything.
func (e *Engine) syncStored(chunks []*Prepared) error {
	locs := make([]blob.Loc, 0, len(chunks))
	for _, p := range chunks {
		if p.written {
			locs = append(locs, p.loc)
		}
	}
	if len(locs) == 0 {
		return nil
	}
	if ls, ok := e.blobs.(blob.LocSyncer); ok {
		return ls.SyncLocs(locs)
	}
	return e.blobs.Sync()
}

// SetBeginHook makes every transaction pass through hook as it begins
// (the namespace sets up its journal's clone lookups there).
func (e *Engine) SetBeginHook(hook func(*Tx)) { e.beginHook = hook }
