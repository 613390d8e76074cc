package nbd

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil/tlstest"
)

// TLS with real clients: libnbd (nbdinfo, nbdcopy) and qemu-img, whose TLS
// is GnuTLS, against a server that requires TLS and a client certificate.
func TestConformanceTLS(t *testing.T) {
	needTool(t, "nbdinfo")
	creds := tlstest.New(t)
	be := newMemBackend(4 << 20)
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	ts.srv.TLSConfig = creds.ServerConfig(true)
	addr := ts.listen(t, "tcp", "127.0.0.1:0")
	uri := func(dir string) string { return "nbds://" + addr + "/disk?tls-certificates=" + dir }

	var info struct {
		Exports []map[string]any `json:"exports"`
	}
	if err := json.Unmarshal([]byte(runTool(t, "nbdinfo", "--json", uri(creds.ClientDir))), &info); err != nil || len(info.Exports) != 1 {
		t.Fatalf("nbdinfo --json over TLS: %v %v", err, info)
	}
	if size := info.Exports[0]["export-size"]; size != float64(4<<20) {
		t.Fatalf("size over TLS: %v", size)
	}

	refused := func(what string, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
		if err == nil {
			t.Errorf("%s: connected, want a refusal\n%s", what, out)
		}
	}
	refused("a client without TLS", "nbdinfo", "nbd://"+addr+"/disk")
	refused("a client without a certificate", "nbdinfo", uri(creds.AnonDir))
	if len(ts.srv.AllClients()) != 0 {
		t.Fatal("a refused client is in transmission")
	}

	// An image in and out: nbdcopy writes it, qemu-img compares it.
	needTool(t, "nbdcopy")
	dir := t.TempDir()
	img := filepath.Join(dir, "img.raw")
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(data)
	copy(data[1<<20:], make([]byte, 1<<20)) // a zero stretch
	if err := os.WriteFile(img, data, 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, "nbdcopy", "--flush", img, uri(creds.ClientDir))
	got := make([]byte, len(data))
	be.ReadAt(got, 0)
	if !bytes.Equal(got, data) {
		t.Fatal("the export does not hold what nbdcopy sent over TLS")
	}
	needTool(t, "qemu-img")
	host, port, _ := strings.Cut(addr, ":")
	out := runTool(t, "qemu-img", "compare",
		"--object", "tls-creds-x509,id=tls0,dir="+creds.ClientDir+",endpoint=client",
		"--image-opts", "driver=raw,file.driver=file,file.filename="+img,
		"driver=raw,file.driver=nbd,file.server.type=inet,file.server.host="+host+",file.server.port="+port+",file.export=disk,file.tls-creds=tls0")
	if !strings.Contains(out, "Images are identical") {
		t.Fatalf("qemu-img compare over TLS:\n%s", out)
	}
}
