package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownSnifferIsUsage checks that every command that reads captures
// takes an option naming no sniffer (--reference, --offset) as a usage
// error (exit 2), recognised by its type (pcapio.SnifferNameError), not by
// its text.
func TestUnknownSnifferIsUsage(t *testing.T) {
	caps := []string{realCaps + "client.pcap", realCaps + "server.pcapng"}
	out := filepath.Join(t.TempDir(), "out")
	for _, cmd := range [][]string{
		{"stats"}, {"merge", "-o", out}, {"messages"}, {"nat"}, {"reconcile"}, {"analyze"},
	} {
		for _, opt := range [][]string{{"--reference", "nosuch"}, {"--offset", "nosuch=1s"}} {
			args := append(append(append([]string{}, cmd...), opt...), caps...)
			var stdout, stderr bytes.Buffer
			code := runArgs(&stdout, &stderr, args...)
			if code != 2 || !strings.Contains(stderr.String(), `"nosuch"`) {
				t.Errorf("%s: exit %d, stderr %q; want a usage error naming the sniffer", strings.Join(args, " "), code, stderr.String())
			}
		}
	}
}
