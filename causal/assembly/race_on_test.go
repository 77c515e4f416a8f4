//go:build race

package assembly

// raceEnabled: the tests run under the race detector (-race), which makes
// the engine ten to twenty times slower.
const raceEnabled = true
