package nbd

// Protocol numbers from the NBD protocol document (doc/proto.md of
// NetworkBlockDevice/nbd). All fields are big-endian on the wire.

const (
	magicNBD          uint64 = 0x4e42444d41474943 // "NBDMAGIC"
	magicIHaveOpt     uint64 = 0x49484156454F5054 // "IHAVEOPT"
	magicOptionReply  uint64 = 0x3e889045565a9
	magicRequest      uint32 = 0x25609513
	magicSimpleReply  uint32 = 0x67446698
	magicStructReply  uint32 = 0x668e33ef
	exportNameZeroPad        = 124 // reserved zeroes after an NBD_OPT_EXPORT_NAME reply
)

// Handshake flags (server) and client flags.
const (
	handshakeFixedNewstyle uint16 = 1 << 0
	handshakeNoZeroes      uint16 = 1 << 1

	clientFixedNewstyle uint32 = 1 << 0
	clientNoZeroes      uint32 = 1 << 1
	clientKnownFlags           = clientFixedNewstyle | clientNoZeroes
)

// Transmission flags.
const (
	flagHasFlags        uint16 = 1 << 0
	flagReadOnly        uint16 = 1 << 1
	flagSendFlush       uint16 = 1 << 2
	flagSendFUA         uint16 = 1 << 3
	flagSendTrim        uint16 = 1 << 5
	flagSendWriteZeroes uint16 = 1 << 6
	flagSendDF          uint16 = 1 << 7
	flagCanMultiConn    uint16 = 1 << 8
	flagSendCache       uint16 = 1 << 10
	flagSendFastZero    uint16 = 1 << 11
)

// Option types.
const (
	optExportName      uint32 = 1
	optAbort           uint32 = 2
	optList            uint32 = 3
	optStartTLS        uint32 = 5
	optInfo            uint32 = 6
	optGo              uint32 = 7
	optStructuredReply uint32 = 8
	optListMetaContext uint32 = 9
	optSetMetaContext  uint32 = 10
)

// Option reply types; errors have bit 31 set.
const (
	repAck         uint32 = 1
	repServer      uint32 = 2
	repInfo        uint32 = 3
	repMetaContext uint32 = 4

	repErrUnsup    uint32 = 1<<31 + 1
	repErrPolicy   uint32 = 1<<31 + 2
	repErrInvalid  uint32 = 1<<31 + 3
	repErrTLSReqd  uint32 = 1<<31 + 5
	repErrUnknown  uint32 = 1<<31 + 6
	repErrShutdown uint32 = 1<<31 + 7
	repErrTooBig   uint32 = 1<<31 + 9
)

// Information types of NBD_REP_INFO.
const (
	infoExport      uint16 = 0
	infoName        uint16 = 1
	infoDescription uint16 = 2
	infoBlockSize   uint16 = 3
)

// Command types.
const (
	cmdRead        uint16 = 0
	cmdWrite       uint16 = 1
	cmdDisc        uint16 = 2
	cmdFlush       uint16 = 3
	cmdTrim        uint16 = 4
	cmdCache       uint16 = 5
	cmdWriteZeroes uint16 = 6
	cmdBlockStatus uint16 = 7
)

// Command flags.
const (
	cmdFlagFUA      uint16 = 1 << 0
	cmdFlagNoHole   uint16 = 1 << 1
	cmdFlagDF       uint16 = 1 << 2
	cmdFlagReqOne   uint16 = 1 << 3
	cmdFlagFastZero uint16 = 1 << 4
)

// Structured reply flags and chunk types.
const (
	replyFlagDone uint16 = 1 << 0

	replyTypeNone        uint16 = 0
	replyTypeOffsetData  uint16 = 1
	replyTypeBlockStatus uint16 = 5
	replyTypeError       uint16 = 1<<15 + 1
)

// Errno is an error value of the NBD protocol (not the host's errno).
type Errno uint32

// The error values the protocol defines.
const (
	EPERM     Errno = 1
	EIO       Errno = 5
	ENOMEM    Errno = 12
	EINVAL    Errno = 22
	ENOSPC    Errno = 28
	EOVERFLOW Errno = 75
	ENOTSUP   Errno = 95
	ESHUTDOWN Errno = 108
)

// Size constraints advertised with NBD_INFO_BLOCK_SIZE.
const (
	MinBlockSize       = 1
	PreferredBlockSize = 4096
	MaxPayload         = 32 << 20
)

// Protocol limits on strings and replies.
const (
	maxStringLen       = 4096    // export names, queries, messages
	maxOptionLen       = 1 << 20 // larger option payloads are treated as abuse
	maxOptions         = 4096    // options per handshake before we hang up
	maxExtentsPerReply = 1 << 20
)

// metaContextBaseAllocation is the one metadata context served.
const (
	metaContextBaseAllocation   = "base:allocation"
	metaContextIDBaseAllocation = 1
)
