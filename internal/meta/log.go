package meta

import (
	"context"
	"fmt"
	"log/slog"
)

// slogLogger passes Pebble's messages to the process's slog logger: its
// routine chatter (flushes, compactions) at debug level, its errors at
// error level.
type slogLogger struct{}

func (slogLogger) Infof(format string, args ...any) {
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (slogLogger) Errorf(format string, args ...any) {
	slog.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf panics with a fatalError, which failStop turns into the store's
// failure, keeping the cause's errno (ENOSPC) visible.
func (slogLogger) Fatalf(format string, args ...any) {
	e := newFatal(format, args)
	slog.Error(e.msg, "component", "pebble")
	panic(e)
}

// logBackgroundError reports a failed flush or compaction, which has no
// caller to return its error to (Pebble's default logs it as chatter).
func logBackgroundError(err error) {
	slog.Error("metadata store: background flush or compaction failed", "component", "pebble", "err", err)
}
