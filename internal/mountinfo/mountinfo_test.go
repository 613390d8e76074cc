package mountinfo

import (
	"strings"
	"testing"
)

func TestParseMountinfo(t *testing.T) {
	in := "36 35 98:0 / /mnt/with\\040space rw,noatime master:1 - fuse.doppel /var/lib/doppel/v rw,user_id=0\n" +
		"garbage line\n" +
		"37 35 98:0 / /home rw shared:2 - ext4 /dev/vda rw\n"
	got, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("parsed %d entries, want 2: %+v", len(got), got)
	}
	want := Entry{Point: "/mnt/with space", FSType: "fuse.doppel", Source: "/var/lib/doppel/v", Dev: "98:0"}
	if got[0] != want {
		t.Errorf("got %+v, want %+v", got[0], want)
	}
}

// The fusectl name of a connection is the kernel's dev_t, not the one
// stat encodes: major 0, minor 300 is 300; major 1, minor 2 is 1<<20 | 2.
func TestFUSEConnection(t *testing.T) {
	for dev, want := range map[string]string{"0:300": "300", "0:52": "52", "1:2": "1048578"} {
		got, err := FUSEConnection(Entry{Dev: dev})
		if err != nil || got != want {
			t.Errorf("FUSEConnection(%s) = %q, %v; want %q", dev, got, err, want)
		}
	}
	if _, err := FUSEConnection(Entry{Dev: "x", Point: "/m"}); err == nil {
		t.Error("a malformed device number was taken")
	}
}

// FuzzParseMountinfo: the mountinfo decoder never panics on any input,
// and every entry it returns has a file system type.
func FuzzParseMountinfo(f *testing.F) {
	f.Add("36 35 98:0 / /mnt rw - fuse.doppel /store rw\n")
	f.Add("1 2 3 4 \\0 - x \\777\n")
	f.Add("- - - - -\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range got {
			if m.FSType == "" {
				t.Fatalf("entry without a type from %q: %+v", in, m)
			}
		}
	})
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false},
		{"/x", "/", true}, {"/a", "/a/b", false},
	} {
		if got := Within(c.p, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.p, c.dir, got)
		}
	}
}
