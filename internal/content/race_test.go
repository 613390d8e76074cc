//go:build race

package content

// raceEnabled lets the randomized tests do fewer steps under the (much
// slower) race detector.
const raceEnabled = true
