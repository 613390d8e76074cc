package main

import "testing"

func TestParseListen(t *testing.T) {
	for _, c := range []struct {
		arg, want string
		warn      bool
	}{
		{"", "unix:/store/nbd.sock", false},
		{"unix:/run/x.sock", "unix:/run/x.sock", false},
		{"tcp:10809", "tcp:127.0.0.1:10809", false},
		{"tcp::10809", "tcp:127.0.0.1:10809", false},
		{"tcp:localhost:1", "tcp:localhost:1", false},
		{"tcp:[::1]:10809", "tcp:[::1]:10809", false},
		{"tcp:0.0.0.0:10809", "tcp:0.0.0.0:10809", true},
		{"tcp:192.168.1.2:", "tcp:192.168.1.2:10809", true},
	} {
		got, warn, err := parseListen(c.arg, "/store")
		if err != nil || got != c.want || (warn != "") != c.warn {
			t.Errorf("parseListen(%q) = %q, warning %q, %v; want %q, warning %v", c.arg, got, warn, err, c.want, c.warn)
		}
	}
	for _, bad := range []string{"tcp:1:99999", "tcp:x", "udp:1", "unix:", "/x.sock"} {
		if got, _, err := parseListen(bad, "/store"); err == nil {
			t.Errorf("parseListen(%q) = %q, want an error", bad, got)
		}
	}
}

func TestNBDURI(t *testing.T) {
	if got := nbdURI("unix:/s/nbd.sock", "disk.img"); got != "nbd+unix:///disk.img?socket=/s/nbd.sock" {
		t.Error(got)
	}
	if got := nbdURI("tcp:127.0.0.1:10809", "a b"); got != "nbd://127.0.0.1:10809/a%20b" {
		t.Error(got)
	}
}
