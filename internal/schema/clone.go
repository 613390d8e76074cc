package schema

// Pin keeps the volume as of version Root's subtree stood at that version
// readable: while it exists, records of inodes below Root that change are
// first kept as retained versions. A clone holds its pin until it is
// materialized or removed; clones made of a lazy clone's tree depend on
// its pin too, since their views read through it.
type Pin struct {
	Root    uint64 // the pinned subtree
	NextIno uint64 // inodes numbered from here on did not exist at the pin
	Held    bool   // its clone still reads through it
	// Deps are the pins this pin's views read through (older lazy views).
	Deps       []uint64
	Dependents uint64 // pins that list this one in Deps
}

const pinFormat = 1

// PinKey is the key of the pin at version v.
func PinKey(v uint64) []byte { return u64key(prefixPin, v, 0) }

// PinRange bounds all pins.
func PinRange() (lower, upper []byte) { return []byte{prefixPin}, []byte{prefixPin + 1} }

// PinVersion extracts the version from a pin key.
func PinVersion(k []byte) (uint64, error) { return u64Of(k, prefixPin) }

// Encode returns the record bytes.
func (p *Pin) Encode() []byte {
	e := enc{}
	e.raw([]byte{pinFormat})
	e.u(p.Root)
	e.u(p.NextIno)
	e.u(boolU(p.Held))
	e.u(uint64(len(p.Deps)))
	for _, d := range p.Deps {
		e.u(d)
	}
	e.u(p.Dependents)
	return e.b
}

// DecodePin parses a pin record.
func DecodePin(b []byte) (Pin, error) {
	d := dec{b: b}
	d.format(pinFormat)
	p := Pin{Root: d.u(), NextIno: d.u(), Held: d.bool()}
	n := d.u()
	if n > uint64(len(d.b)) {
		return Pin{}, ErrBadRecord
	}
	for i := uint64(0); i < n; i++ {
		p.Deps = append(p.Deps, d.u())
	}
	p.Dependents = d.u()
	return p, d.end()
}

// Clone describes a clone (or snapshot) whose root is the inode it is
// keyed by: its origin and pin, its exclusions and its materialization.
type Clone struct {
	Origin     uint64 // the cloned inode
	OriginPath string // where it was, relative to the volume root
	Pin        uint64 // the version it shows
	Created    int64  // ns since the epoch
	Excludes   []string
	ReadOnly   bool
	Lazy       bool   // never materialized in the background
	Removed    bool   // rmclone: its tree is being freed
	Stubs      uint64 // inodes of it not yet materialized
	Done       uint64 // inodes of it materialized so far
}

const cloneFormat = 1

// CloneKey is the key of the clone whose root is ino.
func CloneKey(ino uint64) []byte { return u64key(prefixClone, ino, 0) }

// CloneRange bounds all clone records.
func CloneRange() (lower, upper []byte) { return []byte{prefixClone}, []byte{prefixClone + 1} }

// GoneKey keeps the last record of clone ino after its root went, while
// pins made since it was created may still hold stubs of it, whose
// exclusions and origin the record describes.
func GoneKey(ino uint64) []byte { return u64key(prefixGone, ino, 0) }

// GoneRange bounds all records of gone clones.
func GoneRange() (lower, upper []byte) { return []byte{prefixGone}, []byte{prefixGone + 1} }

// GoneIno extracts the root inode from a gone-clone key.
func GoneIno(k []byte) (uint64, error) { return u64Of(k, prefixGone) }

// CloneIno extracts the root inode from a clone key.
func CloneIno(k []byte) (uint64, error) { return u64Of(k, prefixClone) }

// Encode returns the record bytes.
func (c *Clone) Encode() []byte {
	e := enc{}
	e.raw([]byte{cloneFormat})
	e.u(c.Origin)
	e.bytes([]byte(c.OriginPath))
	e.u(c.Pin)
	e.i(c.Created)
	e.u(uint64(len(c.Excludes)))
	for _, x := range c.Excludes {
		e.bytes([]byte(x))
	}
	e.u(boolU(c.ReadOnly))
	e.u(boolU(c.Lazy))
	e.u(boolU(c.Removed))
	e.u(c.Stubs)
	e.u(c.Done)
	return e.b
}

// DecodeClone parses a clone record.
func DecodeClone(b []byte) (Clone, error) {
	d := dec{b: b}
	d.format(cloneFormat)
	c := Clone{Origin: d.u(), OriginPath: string(d.bytes()), Pin: d.u(), Created: d.i()}
	n := d.u()
	if n > uint64(len(d.b)) {
		return Clone{}, ErrBadRecord
	}
	for i := uint64(0); i < n; i++ {
		c.Excludes = append(c.Excludes, string(d.bytes()))
	}
	c.ReadOnly, c.Lazy, c.Removed = d.bool(), d.bool(), d.bool()
	c.Stubs, c.Done = d.u(), d.u()
	return c, d.end()
}

// LinkMapKey maps (clone, pin, base inode) to the clone's own inode for
// a base file with several names, so that all its names in the clone name
// one inode; its value is U64(local inode).
func LinkMapKey(clone, pin, base uint64) []byte {
	return appendU64(appendU64(u64key(prefixLinkMap, clone, 16), pin), base)
}

// LinkMapRange bounds the link map of clone.
func LinkMapRange(clone uint64) (lower, upper []byte) {
	return u64key(prefixLinkMap, clone, 0), u64key(prefixLinkMap, clone+1, 0)
}

// prefixDirMap keys the directory map. Part of the on-disk format.
const prefixDirMap = 'H'

// DirMapKey maps (clone, pin, origin directory) to the clone's directory
// made from it (its root, or a stub made when its parent was
// materialized); its value is U64(local inode). It is written once and
// never changes, so that a name in the origin can be followed up to the
// directory of the clone that shows it (link counts through clones of
// clones). DirMapKey(clone, 0, 0) holds the clone whose tree held the
// origin when it was cloned (0: none).
func DirMapKey(clone, pin, origin uint64) []byte {
	return appendU64(appendU64(u64key(prefixDirMap, clone, 16), pin), origin)
}

// DirMapRange bounds the directory map of clone.
func DirMapRange(clone uint64) (lower, upper []byte) {
	return u64key(prefixDirMap, clone, 0), u64key(prefixDirMap, clone+1, 0)
}

func u64Of(k []byte, prefix byte) (uint64, error) {
	if len(k) != 9 || k[0] != prefix {
		return 0, ErrBadKey
	}
	return OwnerIno(k), nil
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (d *dec) bool() bool {
	switch d.u() {
	case 0:
		return false
	case 1:
		return true
	}
	d.err = ErrBadRecord
	return false
}
