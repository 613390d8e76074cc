package meta

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// ErrFailed is wrapped by every write to a store that hit an error it
// cannot recover from. Pebble treats a failed write to its log (ENOSPC, an
// I/O error) as fatal: it panics, and leaves its commit pipeline locked.
// The store recovers that panic into an error, wrapping the cause (so that
// errors.Is finds ENOSPC), and from then on refuses every write, sync and
// close without calling into Pebble again, where they would hang. Reads go
// on. What was synced before the failure is in the log; reopening the
// store (a new process) recovers it.
var ErrFailed = errors.New("meta: metadata store failed; unmount and mount again")

// failStop records the first fatal error of a store.
type failStop struct {
	cause atomic.Pointer[error]
}

// failure returns an error wrapping ErrFailed if the store failed, else
// nil. It does not wrap the cause: the cause (say ENOSPC) concerned the
// write that failed, and freeing space now would not help a later one.
func (f *failStop) failure() error {
	if p := f.cause.Load(); p != nil {
		return fmt.Errorf("%w (since: %v)", ErrFailed, *p)
	}
	return nil
}

// stop makes cause the store's failure, unless it failed already.
func (f *failStop) stop(cause error) {
	if f.cause.CompareAndSwap(nil, &cause) {
		slog.Error("metadata store stopped", "component", "pebble", "err", cause)
	}
}

// guard runs fn unless the store failed, turning a panic into the store's
// failure. The call that fails gets an error wrapping the cause too.
func (f *failStop) guard(fn func() error) (err error) {
	if err := f.failure(); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			cause := panicCause(r)
			f.cause.CompareAndSwap(nil, &cause)
			err = fmt.Errorf("%w: %w", ErrFailed, cause)
		}
	}()
	return fn()
}

// panicCause turns a recovered panic value into an error.
func panicCause(r any) error {
	switch v := r.(type) {
	case error:
		return v
	case string:
		return errors.New(v)
	}
	return fmt.Errorf("%v", r)
}

// fatalError is what quietLogger.Fatalf panics with: the message, and the
// first error among the arguments so that its errno survives.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

func newFatal(format string, args []any) *fatalError {
	e := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.cause = err
			break
		}
	}
	return e
}
