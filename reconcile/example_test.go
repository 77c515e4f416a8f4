package reconcile_test

import (
	"fmt"
	"net/netip"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// A client calls a database; one sniffer on their switch saw both
// messages. Reconciled with role naming, the database is its host and
// fixed port, each message has both times from the sniffer, and the
// network delay of each is the difference.
func ExampleReconciler() {
	r, err := reconcile.New(reconcile.Options{
		Naming:   reconcile.NameRole,
		Sniffers: []reconcile.Sniffer{{Name: "lan.pcap", Known: true, Reference: true}},
	})
	if err != nil {
		panic(err)
	}
	client, db := netip.MustParseAddrPort("10.0.0.7:40100"), netip.MustParseAddrPort("10.0.2.5:5432")
	seen := func(first, last, n int64) []flows.Sighting {
		return []flows.Sighting{{TTL: 64, First: first, Last: last, Bytes: n, Segments: 1}}
	}
	r.AddMessage(&flows.Message{Conn: 1, Index: 0, Proto: trace.ProtoTCP, Src: client, Dst: db, Seq: 1, Bytes: 96,
		Kind: trace.KindCall, Call: flows.CallID{Conn: 1}, Sightings: seen(1_000_000, 1_000_050, 96)})
	r.AddMessage(&flows.Message{Conn: 1, Index: 1, Proto: trace.ProtoTCP, Src: db, Dst: client, Seq: 1, Bytes: 2048,
		Kind: trace.KindReturn, Call: flows.CallID{Conn: 1}, Sightings: seen(4_000_000, 4_000_900, 2048)})
	tr, rep, err := r.Finish()
	if err != nil {
		panic(err)
	}
	for _, m := range tr.Messages {
		fmt.Printf("%s -> %s %v %s %d bytes, %d ns on the wire\n",
			tr.Str(m.SrcNode), tr.Str(m.DstNode), m.Kind, tr.Str(m.CallID), m.Bytes, m.RecvTS-m.SendTS)
	}
	fmt.Printf("%d of %d messages with both ends; home of 10.0.2.5: %s\n", rep.BothEnds, rep.Messages, rep.Hosts[1].Home)
	// Output:
	// 10.0.0.7 -> 10.0.2.5:5432 CALL c1.0 96 bytes, 50 ns on the wire
	// 10.0.2.5:5432 -> 10.0.0.7 RETURN c1.0 2048 bytes, 900 ns on the wire
	// 2 of 2 messages with both ends; home of 10.0.2.5: lan.pcap
}
