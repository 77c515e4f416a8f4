package flows_test

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
)

// packet builds one observed TCP packet; real programs get them from
// pcapio.Open(...).Next().
func packet(src, dst string, flags uint8, seq, ack uint32, payload string, ms int64) *pcapio.Packet {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	ts := 1_700_000_000_000_000_000 + ms*1_000_000
	return &pcapio.Packet{
		Obs:    []pcapio.Observation{{Sniffer: 0, TTL: 64, TS: ts, Corrected: ts}},
		Status: pcapio.StatusOK, IPVersion: 4, Src: s.Addr(), Dst: d.Addr(), Proto: pcapio.ProtoTCP,
		SrcPort: s.Port(), DstPort: d.Port(), Seq: seq, Ack: ack, TCPFlags: flags,
		Payload: []byte(payload), PayloadLen: len(payload),
	}
}

func ExampleReader() {
	const syn, ack, psh, fin = pcapio.FlagSYN, pcapio.FlagACK, pcapio.FlagPSH, pcapio.FlagFIN
	cli, srv := "10.0.0.1:40000", "10.0.0.2:80"
	req := "GET / HTTP/1.1\r\nHost: example\r\n\r\n"
	resp := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
	src := &flows.SliceSource{Packets: []*pcapio.Packet{
		packet(cli, srv, syn, 100, 0, "", 0),
		packet(srv, cli, syn|ack, 500, 101, "", 1),
		packet(cli, srv, ack, 101, 501, "", 2),
		packet(cli, srv, psh|ack, 101, 501, req, 3),
		packet(srv, cli, psh|ack, 501, 101+uint32(len(req)), resp, 5),
		packet(cli, srv, fin|ack, 101+uint32(len(req)), 501+uint32(len(resp)), "", 6),
		packet(srv, cli, fin|ack, 501+uint32(len(resp)), 102+uint32(len(req)), "", 7),
	}}
	r, err := flows.NewReader(src, flows.DefaultConfig())
	if err != nil {
		panic(err)
	}
	for {
		m, err := r.Next()
		if err == io.EOF {
			break
		}
		fmt.Printf("%v -> %v %s %s %s %d bytes, sent %d ms, received %d ms\n", m.Src, m.Dst, m.App, m.Kind, m.Call,
			m.Bytes, (int64(m.SendTS())-1_700_000_000_000_000_000)/1e6, (int64(m.RecvTS())-1_700_000_000_000_000_000)/1e6)
	}
	st := r.Stats()
	fmt.Println(st.Check() == nil, st.Messages, st.ConnsFIN)
	// Output:
	// 10.0.0.1:40000 -> 10.0.0.2:80 http CALL c1.0 33 bytes, sent 3 ms, received 3 ms
	// 10.0.0.2:80 -> 10.0.0.1:40000 http RETURN c1.0 40 bytes, sent 5 ms, received 5 ms
	// true 2 1
}
