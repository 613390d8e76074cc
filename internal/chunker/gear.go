package chunker

// gearSeed seeds the generator for the gear table.
//
// Never change it, nor gearTable: every chunk boundary, and therefore
// deduplication against data already stored in any volume, depends on the
// exact table. TestGearTablePinned guards it.
const gearSeed uint64 = 0x646f7070656c4744 // "doppelGD"

// gear maps each byte value to a pseudo-random 64-bit value for the gear
// rolling hash. It is generated rather than written out so that its origin is
// auditable; the generator is splitmix64, which is fixed by its definition.
var gear = gearTable(gearSeed)

func gearTable(seed uint64) (t [256]uint64) {
	s := seed
	for i := range t {
		s += 0x9e3779b97f4a7c15
		z := s
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}
