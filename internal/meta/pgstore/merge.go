package pgstore

import "bytes"

// merged is a batch's view of a key range: its overlay over the store's
// committed state (read through a pager). A store key the batch wrote, or
// that lies in a range it deleted, is hidden; the batch's own values show.
type merged struct {
	store        *pager
	ov           *overlay
	lower, upper []byte // lower never nil; upper nil is no bound
}

func (m *merged) ge(k []byte) (kv, bool, error) {
	if bytes.Compare(k, m.lower) < 0 {
		k = m.lower
	}
	s, sok, err := m.storeGE(k)
	if err != nil {
		return kv{}, false, err
	}
	o, ook := m.ov.ge(k, m.upper)
	switch {
	case sok && ook:
		if bytes.Compare(o.k, s.k) < 0 {
			return o, true, nil
		}
		return s, true, nil
	case ook:
		return o, true, nil
	}
	return s, sok, nil
}

// storeGE is the first store key >= k that the batch does not hide.
func (m *merged) storeGE(k []byte) (kv, bool, error) {
	for {
		s, ok, err := m.store.ge(k)
		if err != nil || !ok {
			return kv{}, false, err
		}
		if m.ov.hasPoint(s.k) {
			k = append(append([]byte{}, s.k...), 0)
			continue
		}
		if r, in := m.ov.covering(s.k); in {
			if r.hi == nil {
				return kv{}, false, nil
			}
			k = r.hi
			continue
		}
		return s, true, nil
	}
}

func (m *merged) lt(k []byte) (kv, bool, error) {
	if m.upper != nil && (k == nil || bytes.Compare(k, m.upper) > 0) {
		k = m.upper
	}
	s, sok, err := m.storeLT(k)
	if err != nil {
		return kv{}, false, err
	}
	o, ook := m.ov.lt(k, m.lower)
	switch {
	case sok && ook:
		if bytes.Compare(o.k, s.k) > 0 {
			return o, true, nil
		}
		return s, true, nil
	case ook:
		return o, true, nil
	}
	return s, sok, nil
}

// storeLT is the last store key < k that the batch does not hide.
func (m *merged) storeLT(k []byte) (kv, bool, error) {
	for {
		s, ok, err := m.store.lt(k)
		if err != nil || !ok {
			return kv{}, false, err
		}
		if m.ov.hasPoint(s.k) {
			k = s.k
			continue
		}
		if r, in := m.ov.covering(s.k); in {
			k = r.lo
			if len(k) == 0 {
				return kv{}, false, nil
			}
			continue
		}
		return s, true, nil
	}
}
