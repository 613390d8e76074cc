package volume

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FormatFile names the file that marks a directory as a doppel volume.
const FormatFile = "doppel.json"

// FormatVersion is the newest volume layout this build reads. Embedded
// volumes (Pebble and segment files in the store directory) are written
// as format 1, as before shared volumes existed; shared volumes
// (docs/SHARED.md: metadata in PostgreSQL, the connection in shared.json)
// as format 2 with kind "shared", so that a doppel that predates them
// refuses them instead of creating an empty Pebble store beside them.
const FormatVersion = 2

const (
	formatEmbedded = 1
	formatShared   = 2
	// KindShared is the format file's kind of a shared volume.
	KindShared = "shared"
)

type formatInfo struct {
	Format int    `json:"doppel_format"`
	UUID   string `json:"uuid"`
	Kind   string `json:"kind,omitempty"` // "" (embedded) or KindShared
}

// ErrNotVolume is returned for a directory that holds no volume.
var ErrNotVolume = errors.New("not a doppel volume")

// CheckFormat returns nil if dir holds a volume whose format this build
// supports, else an error saying what dir is instead.
func CheckFormat(dir string) error {
	_, err := readFormat(dir)
	return err
}

func readFormat(dir string) (formatInfo, error) {
	var f formatInfo
	if st, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("store %s does not exist (%w; 'doppel init --store %s' creates one)", dir, ErrNotVolume, dir)
	} else if err != nil {
		return f, fmt.Errorf("store: %w", err)
	} else if !st.IsDir() {
		return f, fmt.Errorf("store %s is not a directory (%w)", dir, ErrNotVolume)
	}
	b, err := os.ReadFile(filepath.Join(dir, FormatFile))
	if errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("store %s is %w: it has no %s ('doppel init' creates volumes in empty or new directories)", dir, ErrNotVolume, FormatFile)
	}
	if err != nil {
		return f, err
	}
	if f, err = parseFormat(b); err != nil {
		return f, fmt.Errorf("store %s: %w", dir, err)
	}
	return f, nil
}

// parseFormat decodes a format file and refuses formats this build does
// not know.
func parseFormat(b []byte) (formatInfo, error) {
	var f formatInfo
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("damaged format file: %v", err)
	}
	if f.Format > FormatVersion {
		return f, fmt.Errorf("volume format %d is newer than this doppel supports (%d); upgrade doppel", f.Format, FormatVersion)
	}
	if f.Format < 1 {
		return f, fmt.Errorf("unknown volume format %d", f.Format)
	}
	if want := map[int]string{formatEmbedded: "", formatShared: KindShared}[f.Format]; f.Kind != want {
		return f, fmt.Errorf("volume format %d with kind %q (want %q)", f.Format, f.Kind, want)
	}
	return f, nil
}

// writeFormat writes the format file atomically; it is written last at
// init so that a half-created volume is never taken for a volume.
func writeFormat(dir string, f formatInfo) error {
	b, _ := json.MarshalIndent(f, "", "  ")
	tmp := filepath.Join(dir, FormatFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, FormatFile)); err != nil {
		return err
	}
	return syncFile(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
