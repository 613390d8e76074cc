package nbd

// The interfaces below are what an export needs from its storage. Each holds
// one capability so that a backend can be assembled (or wrapped) piece by
// piece; Backend is the union the server requires.

// Sizer reports the export size in bytes; it is read once per connection,
// when the client enters transmission.
type Sizer interface {
	Size() int64
}

// ReaderAt reads len(p) bytes at off. The server only asks for ranges inside
// the export; fewer bytes than asked for is reported to the client as EIO.
// p comes from a pool and holds old bytes: a hole must be written as zeros.
type ReaderAt interface {
	ReadAt(p []byte, off int64) (n int, err error)
}

// WriterAt writes p at off. With fua set, the data must be durable before
// WriteAt returns (NBD_CMD_FLAG_FUA). It must not keep p: the server
// reuses the buffer for later requests.
type WriterAt interface {
	WriteAt(p []byte, off int64, fua bool) error
}

// Flusher makes every completed write durable (NBD_CMD_FLUSH).
type Flusher interface {
	Flush() error
}

// Trimmer discards a range (NBD_CMD_TRIM). Contents of the range are
// undefined afterwards; a backend may ignore the call.
type Trimmer interface {
	Trim(off, length int64) error
}

// Zeroer makes a range read as zeroes (NBD_CMD_WRITE_ZEROES). Without noHole
// it may punch a hole; with noHole the range must end up allocated, so that
// later writes to it cannot fail for lack of space.
type Zeroer interface {
	Zero(off, length int64, noHole bool) error
}

// Cacher is a hint that the client will access the range soon
// (NBD_CMD_CACHE); a no-op is a correct implementation.
type Cacher interface {
	Cache(off, length int64) error
}

// BlockStatuser describes the allocation of a range (NBD_CMD_BLOCK_STATUS
// with the base:allocation context). The extents start at off and are
// consecutive; they may cover less than length (the client asks again for the
// rest) but must describe at least one byte. Extents past length are ignored.
type BlockStatuser interface {
	BlockStatus(off, length int64) ([]Extent, error)
}

// Backend is the storage of one export.
type Backend interface {
	Sizer
	ReaderAt
	WriterAt
	Flusher
	Trimmer
	Zeroer
	Cacher
	BlockStatuser
}

// FastZeroer is optional. A backend that implements it lets the server
// advertise NBD_FLAG_SEND_FAST_ZERO: a WRITE_ZEROES with NBD_CMD_FLAG_FAST_ZERO
// is carried out only when ZeroIsFast says zeroing the range costs less than
// writing it, and is failed with ENOTSUP, untouched, otherwise.
type FastZeroer interface {
	ZeroIsFast(off, length int64, noHole bool) bool
}

// StreamWriter is optional. A backend that implements it takes a plain
// write's payload straight from the connection: WriteFrom writes n bytes
// at off that fill reads from the connection into dst, memory of the
// backend's own, saving the copy out of a request buffer that WriteAt
// costs. fill is called at most once, with n bytes; ok reports whether it
// was. If fill fails, the backend must write nothing and return its error.
// The server calls it from the connection's reader only when the whole
// payload has already arrived, so that fill does not wait for the client
// while the backend may hold locks.
type StreamWriter interface {
	WriteFrom(off int64, n int, fill func(dst []byte) error) (ok bool, err error)
}

// ExtentFlags are the base:allocation status bits, as sent on the wire.
type ExtentFlags uint32

const (
	// ExtentHole: the range is not allocated in the backend.
	ExtentHole ExtentFlags = 1 << 0
	// ExtentZero: the range reads as zeroes.
	ExtentZero ExtentFlags = 1 << 1
)

// Extent is one run of equal allocation status.
type Extent struct {
	Length int64
	Flags  ExtentFlags
}
