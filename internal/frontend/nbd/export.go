package nbd

// Export is one named block device the server offers.
type Export struct {
	// Name is what clients ask for; the empty name selects the default
	// export, which exists when the server has exactly one export.
	Name string
	// Description is shown to humans (NBD_INFO_DESCRIPTION, NBD_OPT_LIST).
	Description string
	Backend     Backend
	// ReadOnly exports advertise NBD_FLAG_READ_ONLY and fail every write
	// command with EPERM.
	ReadOnly bool
}

// transmissionFlags are the flags a client sees for the export; DF is
// offered only to clients that negotiated structured replies, as the
// protocol requires.
func (e *Export) transmissionFlags(structured bool) uint16 {
	flags := flagHasFlags | flagSendFlush | flagCanMultiConn | flagSendCache
	if e.ReadOnly {
		flags |= flagReadOnly
	} else {
		flags |= flagSendFUA | flagSendTrim | flagSendWriteZeroes
		if _, ok := e.Backend.(FastZeroer); ok {
			flags |= flagSendFastZero
		}
	}
	if structured {
		flags |= flagSendDF
	}
	return flags
}
