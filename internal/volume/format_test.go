package volume

import (
	"encoding/json"
	"testing"
)

func TestParseFormat(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"doppel_format":1,"uuid":"x"}`, true},
		{`{"doppel_format":3}`, false}, // newer than this build
		{`{"doppel_format":2,"uuid":"x","kind":"shared"}`, true},
		{`{"doppel_format":2}`, false},                 // a shared volume says so
		{`{"doppel_format":1,"kind":"shared"}`, false}, // and only format 2 is shared
		{`{"doppel_format":0}`, false},
		{`{`, false},
		{``, false},
	} {
		if _, err := parseFormat([]byte(c.in)); (err == nil) != c.ok {
			t.Errorf("parseFormat(%q) error %v, want ok=%v", c.in, err, c.ok)
		}
	}
}

// FuzzParseFormat: the format file decoder never panics, and what it
// accepts is a format this build supports and encodes back to itself.
func FuzzParseFormat(f *testing.F) {
	f.Add([]byte(`{"doppel_format":1,"uuid":"5f0c"}`))
	f.Add([]byte(`{"doppel_format":7}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fi, err := parseFormat(b)
		if err != nil {
			return
		}
		if fi.Format < 1 || fi.Format > FormatVersion {
			t.Fatalf("accepted format %d", fi.Format)
		}
		again, err := json.Marshal(fi)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := parseFormat(again); err != nil || back != fi {
			t.Fatalf("round trip %+v -> %s -> %+v, %v", fi, again, back, err)
		}
	})
}
