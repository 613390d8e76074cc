package exports

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// listen opens addr, "unix:/absolute/path" or "tcp:HOST:PORT". A Unix
// socket file left by a server that is gone is replaced; one that answers
// is not.
func listen(addr string) (net.Listener, error) {
	network, where, ok := strings.Cut(addr, ":")
	switch {
	case !ok:
	case network == "unix":
		if !strings.HasPrefix(where, "/") {
			return nil, fmt.Errorf("listen %s: the socket path must be absolute", addr)
		}
		if err := removeStaleSocket(where); err != nil {
			return nil, err
		}
		ln, err := net.Listen("unix", where)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(true)
		return ln, nil
	case network == "tcp":
		ln, err := net.Listen("tcp", where)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return ln, nil
	}
	return nil, fmt.Errorf("listen address %q: want unix:PATH or tcp:HOST:PORT", addr)
}

func removeStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("listen unix:%s: the path exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("listen unix:%s: another server answers on it", path)
	}
	return os.Remove(path)
}

// address is what clients connect to, with the port the system chose
// for tcp:HOST:0.
func address(ln net.Listener) string {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return "tcp:" + a.String()
	}
	return "unix:" + ln.Addr().String()
}
