package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestNBDMountedVolume exports files of a mounted volume through its
// daemon: the block view and the FUSE view stay coherent both ways, a
// clone of the exported file is exported at the same time and diverges
// from it, doppel status lists the exports and their clients, and a
// killed doppel nbd takes its export with it.
func TestNBDMountedVolume(t *testing.T) {
	requireNBDTools(t, "nbdcopy")
	v := newVolume(t)
	disk := v.path("disk.img")
	srv := startNBD(t, "--create", "16M", disk)
	uri := srv.URI("disk.img")
	if st, err := os.Stat(disk); err != nil || st.Size() != 16*mib {
		t.Fatalf("--create through the mount: %v %v", st, err)
	}

	// Cache the file's pages in the kernel, then change it over NBD.
	if b, err := os.ReadFile(disk); err != nil || !bytes.Equal(b, make([]byte, 16*mib)) {
		t.Fatalf("new file through the mount: %v", err)
	}
	data := testutil.SeededBytes(4, 16*mib)
	runClient(t, "nbdcopy", writeTemp(t, data), uri)
	if b, err := os.ReadFile(disk); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the mount does not show what NBD wrote (err %v)", err)
	}
	// A descriptor that keeps the file's pages cached sees a write over
	// NBD at once, not only once the attribute cache times out (1 s).
	held, err := os.Open(disk)
	testutil.Check(t, err)
	page := make([]byte, 4096)
	_, err = held.ReadAt(page, 8*mib)
	testutil.Check(t, err)
	qemuIO(t, uri, "write -P 0x99 8M 4k")
	_, err = held.ReadAt(page, 8*mib)
	testutil.Check(t, err)
	held.Close()
	if !bytes.Equal(page, bytes.Repeat([]byte{0x99}, 4096)) {
		t.Fatal("the mount's cached page was not dropped when NBD wrote it")
	}
	copy(data[8*mib:], page)

	// And the other way: written through the mount, read over NBD.
	f, err := os.OpenFile(disk, os.O_WRONLY, 0)
	testutil.Check(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0x77}, mib), 2*mib)
	testutil.Check(t, err)
	testutil.Check(t, f.Close())
	qemuIO(t, uri, "read -P 0x77 2M 1M")

	// A clone of the exported file, exported at the same time.
	if out, err := runDoppel(time.Minute, "clone", disk, v.path("clone.img")); err != nil {
		t.Fatalf("doppel clone: %v\n%s", err, out)
	}
	cloneSrv := startNBD(t, "--listen", "unix:"+filepath.Join(t.TempDir(), "clone.sock"), v.path("clone.img"))
	cloneURI := cloneSrv.URI("clone.img")
	qemuIO(t, cloneURI, "write -P 0x11 0 1M", "read -P 0x77 2M 1M")
	qemuIO(t, uri, "write -P 0x22 4M 1M", "read -P 0x77 2M 1M")
	qemuIO(t, cloneURI, "read -P 0x11 0 1M")
	clone, err := os.ReadFile(v.path("clone.img"))
	testutil.Check(t, err)
	want := append([]byte(nil), data...)
	copy(want[2*mib:3*mib], bytes.Repeat([]byte{0x77}, mib))
	copy(want[:mib], bytes.Repeat([]byte{0x11}, mib))
	if !bytes.Equal(clone, want) {
		t.Error("the clone's content is not its origin's at the clone plus its own writes")
	}

	// doppel status lists both servers; a connected client is counted.
	client := exec.Command("qemu-io", "-f", "raw", uri)
	stdin, err := client.StdinPipe()
	testutil.Check(t, err)
	testutil.Check(t, client.Start())
	defer func() { stdin.Close(); client.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ex := nbdStatus(t, v.Mnt)
		if len(ex) == 2 && ex[srv.Listen+" disk.img"] == 1 && ex[cloneSrv.Listen+" clone.img"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("doppel status lists exports %v; want disk.img with 1 client and clone.img with none", ex)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stdin.Close()
	client.Wait()

	// A killed doppel nbd: the daemon stops its export.
	cloneSrv.Kill()
	for deadline := time.Now().Add(30 * time.Second); len(nbdStatus(t, v.Mnt)) != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the export of a killed doppel nbd still runs: %v", nbdStatus(t, v.Mnt))
		}
	}
	srv.Stop(t)
	v.umount(t)
	v.fsck(t)
}

// nbdStatus is the exports doppel status lists for the volume mounted on
// mnt: "LISTEN NAME" to its client count.
func nbdStatus(t *testing.T, mnt string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, s := range nbdServers(t, mnt) {
		for _, e := range s.Exports {
			m[s.Listen+" "+e.Name] = e.Clients
		}
	}
	return m
}

// nbdServerStatus is one NBD server in doppel status --json.
type nbdServerStatus struct {
	Listen     string
	TLS        bool `json:"tls"`
	ClientAuth bool `json:"client_auth"`
	Exports    []struct {
		Name    string
		Clients int
	}
}

// nbdServers is the NBD servers doppel status lists for the volume
// mounted on mnt.
func nbdServers(t *testing.T, mnt string) []nbdServerStatus {
	t.Helper()
	out, err := runDoppel(time.Minute, "status", "--json")
	if err != nil {
		t.Fatalf("doppel status: %v\n%s", err, out)
	}
	var st struct {
		Volumes []struct {
			Mountpoint string
			Daemon     *struct{ Exports []nbdServerStatus }
		}
	}
	testutil.Check(t, json.Unmarshal(out, &st))
	for _, v := range st.Volumes {
		if v.Mountpoint == mnt && v.Daemon != nil {
			return v.Daemon.Exports
		}
	}
	return nil
}

// TestNBDSizeFollowsFile: a file grown or shortened through the mount is
// exported at its new size to the clients that connect after.
func TestNBDSizeFollowsFile(t *testing.T) {
	requireNBDTools(t)
	v := newVolume(t)
	disk := v.path("disk.img")
	srv := startNBD(t, "--create", "16M", disk)
	uri := srv.URI("disk.img")
	testutil.Check(t, os.Truncate(disk, 40*mib))
	if got := exportSize(t, uri); got != 40*mib {
		t.Fatalf("export size %d after growing the file to 40 MiB", got)
	}
	qemuIO(t, uri, "write -P 0x3c 39M 1M")
	b, err := os.ReadFile(disk)
	testutil.Check(t, err)
	if len(b) != 40*mib || !bytes.Equal(b[39*mib:], bytes.Repeat([]byte{0x3c}, mib)) {
		t.Fatal("the mount does not show the write past the file's old end")
	}
	testutil.Check(t, os.Truncate(disk, 8*mib))
	if got := exportSize(t, uri); got != 8*mib {
		t.Fatalf("export size %d after shortening the file to 8 MiB", got)
	}
	srv.Stop(t)
}
