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

func TestParseByteSize(t *testing.T) {
	for s, want := range map[string]int64{"4096": 4096, "10G": 10 << 30, "512m": 512 << 20, "1TiB": 1 << 40, "3KB": 3072} {
		if got, err := parseByteSize(s); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "-1", "1.5G", "1P", "99999999999T"} {
		if got, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", bad, got)
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
