package main

import (
	"strings"
	"testing"
)

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
		got, warn, err := parseListen(c.arg, "/store", anyoneInClear)
		if err != nil || got != c.want || (warn != "") != c.warn {
			t.Errorf("parseListen(%q) = %q, warning %q, %v; want %q, warning %v", c.arg, got, warn, err, c.want, c.warn)
		}
	}
	for _, bad := range []string{"tcp:1:99999", "tcp:x", "udp:1", "unix:", "/x.sock"} {
		if got, _, err := parseListen(bad, "/store", anyoneInClear); err == nil {
			t.Errorf("parseListen(%q) = %q, want an error", bad, got)
		}
	}
}

func TestNBDURI(t *testing.T) {
	if got := nbdURI("unix:/s/nbd.sock", "disk.img", false); got != "nbd+unix:///disk.img?socket=/s/nbd.sock" {
		t.Error(got)
	}
	if got := nbdURI("tcp:127.0.0.1:10809", "a b", false); got != "nbd://127.0.0.1:10809/a%20b" {
		t.Error(got)
	}
	if got := nbdURI("tcp:127.0.0.1:10809", "d", true); got != "nbds://127.0.0.1:10809/d" {
		t.Error(got)
	}
	if got := nbdURI("unix:/s/nbd.sock", "d", true); got != "nbds+unix:///d?socket=/s/nbd.sock" {
		t.Error(got)
	}
}

func TestParseListenWarnsByAccess(t *testing.T) {
	for _, c := range []struct {
		arg    string
		access int
		warn   string // a word the warning must hold; "" for none
	}{
		{"tcp:0.0.0.0:1", anyoneInClear, "without TLS"},
		{"tcp:0.0.0.0:1", anyoneEncrypted, "--tls-client-ca"},
		{"tcp:0.0.0.0:1", certified, ""},
		{"tcp:127.0.0.1:1", anyoneInClear, ""},
	} {
		_, warn, err := parseListen(c.arg, "/store", c.access)
		if err != nil || (c.warn == "") != (warn == "") || !strings.Contains(warn, c.warn) {
			t.Errorf("parseListen(%q, access %d): warning %q, %v; want one with %q", c.arg, c.access, warn, err, c.warn)
		}
	}
}
