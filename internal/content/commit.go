package content

// CommitChunks is the write path's one step from cut chunks to committed
// metadata: it stores chunks, begins a transaction that owns them, runs
// fill (which writes the extents and records naming them) and commits.
// The chunks' bytes are in the store before any metadata naming them can
// commit (ordered mode), and a failure at any stage frees whatever was
// stored for nothing. lock, if not nil, runs between storing and
// beginning: callers take their inode locks there, as locks come before a
// transaction, and release them once CommitChunks returned.
func (e *Engine) CommitChunks(chunks []*Prepared, lock func(), fill func(tx *Tx) error) error {
	if err := e.Store(chunks); err != nil {
		return err
	}
	if lock != nil {
		lock()
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

// SetBeginHook makes every transaction pass through hook as it begins
// (the namespace sets up its journal's clone lookups there).
func (e *Engine) SetBeginHook(hook func(*Tx)) { e.beginHook = hook }
