package content

import (
	"sync"
	"sync/atomic"
)

// Loan is memory of a writer's (a streaming run's array) whose chunks a
// blob store may upload from where they lie instead of copying them
// (blob.Lender). It counts its holders: the writer, and each store write
// that kept referencing it. When the last one lets go, done runs (the
// writer's pool takes the array back); until then nobody may change it.
type Loan struct {
	backing []byte
	holders atomic.Int32
	done    func()
}

// NewLoan lends backing, whose chunks the caller cuts and stores; the
// caller holds it until it calls Drop.
func NewLoan(backing []byte, done func()) *Loan {
	l := &Loan{backing: backing, done: done}
	l.holders.Store(1)
	return l
}

// take adds a holder and returns the function that lets it go (once,
// however often it is called).
func (l *Loan) take() func() {
	l.holders.Add(1)
	var once sync.Once
	return func() { once.Do(l.Drop) }
}

// Drop lets one holder go; the last one runs done.
func (l *Loan) Drop() {
	if l.holders.Add(-1) == 0 {
		l.done()
	}
}
