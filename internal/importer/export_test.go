package importer

// Hooks for the external tests, which inject source errors.
var (
	OpenSource  = &openSource
	PreadSource = &preadSource
)
