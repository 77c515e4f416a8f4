//go:build !race

package accuracy

const raceEnabled = false
