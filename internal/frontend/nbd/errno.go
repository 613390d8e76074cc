package nbd

import (
	"errors"
	"syscall"
)

// errnoOf maps a backend error to the NBD error sent to the client. The
// protocol has only a handful of values; anything not recognised is EIO, so
// a client never sees a host-specific number.
func errnoOf(err error) Errno {
	var e Errno
	if errors.As(err, &e) && e != 0 {
		return e
	}
	var sys syscall.Errno
	if !errors.As(err, &sys) {
		return EIO
	}
	switch sys {
	case syscall.EPERM, syscall.EACCES, syscall.EROFS:
		return EPERM
	case syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG:
		// The protocol asks for EDQUOT and EFBIG to be reported as ENOSPC.
		return ENOSPC
	case syscall.EINVAL:
		return EINVAL
	case syscall.ENOMEM:
		return ENOMEM
	case syscall.EOVERFLOW:
		return EOVERFLOW
	case syscall.ESHUTDOWN:
		return ESHUTDOWN
	default:
		return EIO
	}
}

func (e Errno) Error() string {
	switch e {
	case EPERM:
		return "nbd: operation not permitted"
	case EIO:
		return "nbd: input/output error"
	case ENOMEM:
		return "nbd: cannot allocate memory"
	case EINVAL:
		return "nbd: invalid argument"
	case ENOSPC:
		return "nbd: no space left on device"
	case EOVERFLOW:
		return "nbd: value too large"
	case ENOTSUP:
		return "nbd: operation not supported"
	case ESHUTDOWN:
		return "nbd: server is shutting down"
	}
	return "nbd: unknown error"
}
