package filelock

import "testing"

// FuzzDecode: any input either fails to decode or decodes to locks that
// encode back to it.
func FuzzDecode(f *testing.F) {
	f.Add(Encode([]Lock{{Start: 0, End: 9, Type: Write, Pid: 7}, {Start: 20, End: MaxEnd, Type: Read}}))
	f.Add([]byte{})
	f.Add(make([]byte, recordSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		ls, err := Decode(b)
		if err != nil {
			return
		}
		if string(Encode(ls)) != string(b) {
			t.Fatalf("decode/encode changed %x", b)
		}
		for _, l := range ls {
			if !l.Valid() || l.Type == Unlock {
				t.Fatalf("decoded an invalid lock %+v", l)
			}
		}
	})
}
