package meta

// MaxTrackedWrites is exported for the external tests.
const MaxTrackedWrites = maxTrackedWrites
