//go:build !race

package assembly

// raceEnabled: the tests run under the race detector (-race).
const raceEnabled = false
