package pipeline

import (
	"os"
	"testing"

	"github.com/wirepath/wirepath/flows"
)

func TestProfPipeline(t *testing.T) {
	if _, err := os.Stat("/tmp/grpc-big.pcap"); err != nil {
		t.Skip()
	}
	cfg := Config{Captures: []string{"/tmp/grpc-big.pcap"}, Flows: flows.DefaultConfig()}
	cfg.Flows.Framing = os.Getenv("NOFRAMING") == ""
	var b []byte
	n := 0
	_, err := Messages(cfg, func(m *flows.Message) error { b = flows.AppendMessageTSV(b[:0], m); n++; return nil })
	t.Log(n, err)
}
