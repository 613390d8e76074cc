package testutil

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// SocketPair returns two connected Unix stream sockets. Unlike net.Pipe's
// ends, they buffer (a write does not wait for the peer's read, as on a
// real connection: a TLS alert can be sent while the peer still writes)
// and can be half-closed (CloseWrite: an input can end while replies are
// read).
func SocketPair(t testing.TB) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conv := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conv(fds[0]), conv(fds[1])
}
