package chunker

import (
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		in, canon string
		want      Policy
	}{
		{"cdc", "cdc:16K:64K:256K", DefaultPolicy()},
		{"cdc:16K:64K:256K", "cdc:16K:64K:256K", DefaultPolicy()},
		{"cdc:16384:65536:262144", "cdc:16K:64K:256K", DefaultPolicy()},
		{"cdc:16k:64k:256k", "cdc:16K:64K:256K", DefaultPolicy()},
		{"cdc:64:64:64", "cdc:64:64:64", Policy{Kind: "cdc", Min: 64, Avg: 64, Max: 64}},
		{"cdc:1000:1K:1500", "cdc:1000:1K:1500", Policy{Kind: "cdc", Min: 1000, Avg: 1024, Max: 1500}},
		{"cdc:512K:1M:16M", "cdc:512K:1M:16M", Policy{Kind: "cdc", Min: 512 << 10, Avg: 1 << 20, Max: 16 << 20}},
		{"cdc:1M:1M:16384K", "cdc:1M:1M:16M", Policy{Kind: "cdc", Min: 1 << 20, Avg: 1 << 20, Max: 16 << 20}},
		{"fixed:4K", "fixed:4K", Policy{Kind: "fixed", Size: 4096}},
		{"fixed:512", "fixed:512", Policy{Kind: "fixed", Size: 512}},
		{"fixed:2048K", "fixed:2M", Policy{Kind: "fixed", Size: 2 << 20}},
		{"fixed:16M", "fixed:16M", Policy{Kind: "fixed", Size: 16 << 20}},
		{"fixed:04k", "fixed:4K", Policy{Kind: "fixed", Size: 4096}},
	}
	for _, tt := range tests {
		p, err := ParsePolicy(tt.in)
		if err != nil {
			t.Errorf("ParsePolicy(%q): %v", tt.in, err)
			continue
		}
		if p != tt.want {
			t.Errorf("ParsePolicy(%q) = %+v, want %+v", tt.in, p, tt.want)
		}
		if s := p.String(); s != tt.canon {
			t.Errorf("ParsePolicy(%q).String() = %q, want %q", tt.in, s, tt.canon)
		}
		if q, err := ParsePolicy(p.String()); err != nil || q != p {
			t.Errorf("round trip of %q: %+v, %v", tt.in, q, err)
		}
		c, err := New(p)
		if err != nil {
			t.Errorf("New(%v): %v", p, err)
		} else if c.Policy() != p {
			t.Errorf("New(%v).Policy() = %v", p, c.Policy())
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct{ in, why string }{
		{"", "unknown kind"},
		{"rabin:1K:2K:4K", "unknown kind"},
		{"CDC", "unknown kind"},
		{" cdc", "unknown kind"},
		{"cdc:", "want"},
		{"cdc:1K:2K", "want"},
		{"cdc:1K:2K:4K:8K", "want"},
		{"cdc::2K:4K", "size"},
		{"cdc:1K:2K:4G", "size"},
		{"cdc:1K:2K:-4K", "size"},
		{"cdc:+1K:2K:4K", "size"},
		{"cdc:1K:2K:4 K", "size"},
		{"cdc:1_000:2K:4K", "size"},
		{"cdc:1KK:2K:4K", "size"},
		{"cdc:K:2K:4K", "size"},
		{"cdc:1K:2K:99999999999999999999999", "limit"},
		{"cdc:1K:2K:17M", "limit"},
		{"cdc:32:64:128", "below 64"},
		{"cdc:0:64:128", "below 64"},
		{"cdc:4K:2K:8K", "min <= avg <= max"},
		{"cdc:1K:8K:4K", "min <= avg <= max"},
		{"cdc:1K:3K:8K", "power of two"},
		{"cdc:1M:8M:16777217", "limit"},
		{"fixed", "fixed:SIZE"},
		{"fixed:", "size"},
		{"fixed:4K:8K", "fixed:SIZE"},
		{"fixed:256", "outside"},
		{"fixed:0", "outside"},
		{"fixed:3K", "power of two"},
		{"fixed:32M", "limit"},
	}
	for _, tt := range tests {
		p, err := ParsePolicy(tt.in)
		if err == nil {
			t.Errorf("ParsePolicy(%q) = %v, want error", tt.in, p)
			continue
		}
		if !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "chunker:") {
			t.Errorf("ParsePolicy(%q): error %q does not mention %q", tt.in, err, tt.why)
		}
	}
}

func TestNewRejectsInvalid(t *testing.T) {
	for _, p := range []Policy{
		{},
		{Kind: "cdc"},
		{Kind: "cdc", Min: 64, Avg: 96, Max: 128},
		{Kind: "cdc", Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10, Size: 4096},
		{Kind: "fixed", Size: 1000},
		{Kind: "fixed", Size: 4096, Max: 4096},
		{Kind: "fixed", Size: -4096},
	} {
		if c, err := New(p); err == nil {
			t.Errorf("New(%+v) = %v, want error", p, c.Policy())
		} else {
			t.Logf("New(%+v): %v", p, err)
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	c, err := New(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Policy().String(); got != "cdc:16K:64K:256K" {
		t.Errorf("default policy %s", got)
	}
	if c.MaxSize() != 256<<10 {
		t.Errorf("MaxSize = %d", c.MaxSize())
	}
}
