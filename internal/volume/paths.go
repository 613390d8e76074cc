package volume

import (
	"errors"
	"os"
	"path/filepath"
)

// DefaultStore is where a volume lives when no --store is given:
// $DOPPEL_STORE, else $XDG_DATA_HOME/doppel/default, else
// ~/.local/share/doppel/default.
func DefaultStore() (string, error) {
	if s := os.Getenv("DOPPEL_STORE"); s != "" {
		return filepath.Abs(s)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "doppel", "default"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("cannot find a default store: set --store, DOPPEL_STORE or HOME")
	}
	return filepath.Join(home, ".local", "share", "doppel", "default"), nil
}
