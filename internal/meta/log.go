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

func (slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	slog.Error(msg, "component", "pebble")
	panic(msg)
}

// logBackgroundError reports a failed flush or compaction, which has no
// caller to return its error to (Pebble's default logs it as chatter).
func logBackgroundError(err error) {
	slog.Error("metadata store: background flush or compaction failed", "component", "pebble", "err", err)
}
