package namespace

import "sync"

const nStripes = 512

// stripes are per-inode locks, hashed by inode number.
type stripes [nStripes]sync.RWMutex

func (s *stripes) of(ino uint64) *sync.RWMutex { return &s[ino%nStripes] }

// lockTwo locks the stripes of a and b exclusively, in stripe order, and
// returns the function that unlocks them.
func (s *stripes) lockTwo(a, b uint64) func() {
	i, j := a%nStripes, b%nStripes
	if i == j {
		s[i].Lock()
		return s[i].Unlock
	}
	if i > j {
		i, j = j, i
	}
	s[i].Lock()
	s[j].Lock()
	return func() { s[j].Unlock(); s[i].Unlock() }
}
