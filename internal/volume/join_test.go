package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil"
)

// A second store directory made with Join opens the same volume: what
// one wrote the other reads. While one has the volume open, opening it
// through the other is refused, naming the first one's session; once the
// first closes, the second opens. Join refuses what it cannot join.
func TestJoin(t *testing.T) {
	e := newS3Env(t)
	first := filepath.Join(t.TempDir(), "first")
	testutil.Check(t, Init(first, InitOptions{Meta: e.dsn, Data: e.dataURL("joined")}))
	second := filepath.Join(t.TempDir(), "second")
	schemaName, uuid, err := Join(second, JoinOptions{Meta: e.dsn})
	testutil.Check(t, err)
	f, err := readFormat(first)
	testutil.Check(t, err)
	if uuid != f.UUID || !strings.HasPrefix(schemaName, "doppel_") {
		t.Fatalf("joined %s (schema %s), want %s", uuid, schemaName, f.UUID)
	}
	info, err := readShared(second)
	testutil.Check(t, err)
	if info.Data != e.dataURL("joined") {
		t.Fatalf("joined data URL %q, want the volume's %q", info.Data, e.dataURL("joined"))
	}

	// The join marked the volume for several hosts: both store
	// directories open it at once, and what one wrote the other reads.
	v, err := Open(first, quietLog())
	testutil.Check(t, err)
	defer v.Close()
	data := testutil.SeededBytes(3, 300<<10)
	testutil.Check(t, writeFile(t, v, "f", data, true))
	w, err := Open(second, quietLog())
	testutil.Check(t, err)
	defer w.Close()
	if !v.MultiHost || !w.MultiHost {
		t.Fatalf("a joined volume opened for one host (%v, %v)", v.MultiHost, w.MultiHost)
	}
	if got := readFile(t, w, "f"); string(got) != string(data) {
		t.Fatalf("the second store read %d bytes, not what the first wrote", len(got))
	}
	// A process that would run it for one host (DOPPEL_MULTIHOST=0), and
	// an offline check, are refused while other hosts have it open,
	// naming a session.
	third := filepath.Join(t.TempDir(), "third")
	_, _, err = Join(third, JoinOptions{Meta: e.dsn})
	testutil.Check(t, err)
	t.Setenv("DOPPEL_MULTIHOST", "0")
	if _, err := Open(third, quietLog()); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "session") {
		t.Fatalf("open for one host while two hosts have the volume: %v, want ErrInUse naming a session", err)
	}
	t.Setenv("DOPPEL_MULTIHOST", "")
	if _, err := OpenForCheck(third, quietLog()); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "unmounted on every host") {
		t.Fatalf("offline check while two hosts have the volume: %v, want ErrInUse", err)
	}

	for name, tc := range map[string]struct {
		opt  JoinOptions
		want string
	}{
		"other data":   {JoinOptions{Meta: e.dsn, Data: e.dataURL("elsewhere")}, "is not the volume's data store"},
		"no such":      {JoinOptions{Meta: e.dsn + "&schema=nothing_here"}, "holds no doppel volume"},
		"bad data URL": {JoinOptions{Meta: e.dsn, Data: "s3://"}, "data store"},
	} {
		dir := filepath.Join(t.TempDir(), "x")
		if _, _, err := Join(dir, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, FormatFile)); err == nil {
			t.Errorf("%s: a failed join left a volume behind", name)
		}
	}

	// A host that opened the volume before it was joined runs it for one
	// host: the joined one is refused, told to have it mounted again.
	solo := filepath.Join(t.TempDir(), "solo")
	testutil.Check(t, Init(solo, InitOptions{Meta: e.dsn + "&schema=solo", Data: e.dataURL("solo")}))
	sv, err := Open(solo, quietLog())
	testutil.Check(t, err)
	late := filepath.Join(t.TempDir(), "late")
	_, _, err = Join(late, JoinOptions{Meta: e.dsn + "&schema=solo"})
	testutil.Check(t, err)
	if _, err := Open(late, quietLog()); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "for one host only") {
		t.Fatalf("open beside a host that has the volume for one host: %v, want ErrInUse saying so", err)
	}
	testutil.Check(t, sv.Close())
	sv, err = Open(solo, quietLog()) // now for several
	testutil.Check(t, err)
	lv, err := Open(late, quietLog())
	testutil.Check(t, err)
	testutil.Check(t, lv.Close())
	testutil.Check(t, sv.Close())

	// The failed joins created nothing in the database.
	if names, err := pgstore.ListVolumes(context.Background(), e.dsn); err != nil || len(names) != 2 || names[0] != schemaName || names[1] != "solo" {
		t.Fatalf("volumes in the database after failed joins: %v, %v; want only %s and solo", names, err, schemaName)
	}

	// A volume whose data is in its creator's store directory, and a
	// database with two volumes when no schema is named.
	local := filepath.Join(t.TempDir(), "local")
	testutil.Check(t, Init(local, InitOptions{Meta: e.dsn + "&schema=localdata"}))
	if _, _, err := Join(filepath.Join(t.TempDir(), "y"), JoinOptions{Meta: e.dsn + "&schema=localdata"}); !errors.Is(err, ErrDataOnOneHost) {
		t.Errorf("join of a volume with local data: %v, want ErrDataOnOneHost", err)
	}
	if _, _, err := Join(filepath.Join(t.TempDir(), "z"), JoinOptions{Meta: e.dsn}); err == nil || !strings.Contains(err.Error(), "name one with ?schema=") {
		t.Errorf("join without a schema among two volumes: %v", err)
	}
}
