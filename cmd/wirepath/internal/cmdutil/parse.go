package cmdutil

import (
	"fmt"
	"strings"
	"time"
)

// ParseNodeDuration parses a NODE=DURATION flag value such as "WS2=30ms" or
// "CLIENT=-1s".
func ParseNodeDuration(s string) (string, time.Duration, error) {
	node, d, ok := strings.Cut(s, "=")
	if !ok || node == "" {
		return "", 0, fmt.Errorf("want NODE=DURATION")
	}
	v, err := time.ParseDuration(d)
	if err != nil {
		return "", 0, err
	}
	return node, v, nil
}
