package main

import "testing"

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "64K": 64 << 10, "512M": 512 << 20, "512m": 512 << 20,
		"1G": 1 << 30, "10G": 10 << 30, "2GB": 2 << 30, "1t": 1 << 40, "1TiB": 1 << 40, "3KB": 3072} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1X", "G", "1.5G", "1P", "99999999999T"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
