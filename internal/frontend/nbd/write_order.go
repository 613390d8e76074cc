package nbd

// A connection's plain writes reach the backend in the order the client
// sent them, though the workers run them concurrently with everything
// else. A client that streams an image (nbdcopy: each connection writes
// its own range, request after request) then appends to one run of the
// file's write buffer. Run in whatever order the workers got to them, the
// writes left gaps that later ones filled: runs began apart, grew by
// reallocation and were copied together, a tenth of the server's CPU in a
// copy into an export.
//
// Only the backend call is ordered: the reply goes out afterwards, and
// reads, flushes and the rest do not wait. Writes with FUA are not
// ordered, so that a flush inside one never holds the writes after it.
// Nor are small writes (below orderedWriteMin): a random writer's blocks
// gain nothing from an order, and each turn handed on costs a goroutine
// wakeup where the file's lock would have passed by spinning (fio's 4 KiB
// random writes at depth 16: about 3 % fewer IOPS when ordered). The
// protocol leaves the order of requests in flight to the server, so
// nothing a client may rely on changes.

// orderedWriteMin is the smallest write that takes a turn: what streaming
// clients send (nbdcopy 256 KiB, qemu-img up to 2 MiB) and random block
// writes are not.
const orderedWriteMin = 64 << 10

// writeTurn is one write's place in its connection's order: it waits for
// after (closed once the write before was applied; nil: none), and closes
// mine once it has been applied. The zero writeTurn waits for nothing.
type writeTurn struct {
	after <-chan struct{}
	mine  chan struct{}
}

// writeOrder hands out the turns of one connection's writes; only the
// reader goroutine uses it.
type writeOrder struct {
	last chan struct{}
}

// next is the turn of the write read now.
func (o *writeOrder) next() writeTurn {
	t := writeTurn{after: o.last, mine: make(chan struct{})}
	o.last = t.mine
	return t
}

// wait blocks until the writes before this one were applied.
func (t writeTurn) wait() {
	if t.after != nil {
		<-t.after
	}
}

// done lets the next write go.
func (t writeTurn) done() {
	if t.mine != nil {
		close(t.mine)
	}
}
