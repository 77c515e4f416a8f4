package pcapio_test

import (
	"fmt"
	"io"
	"log"

	"github.com/wirepath/wirepath/pcapio"
)

// Reading several sniffers' captures as one deduplicated, clock-corrected
// stream.
func ExampleOpen() {
	m, err := pcapio.Open([]string{"testdata/example-a.pcap", "testdata/example-b.pcapng"}, pcapio.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if p.Status == pcapio.StatusOK && p.Proto == pcapio.ProtoTCP {
			fmt.Printf("%v:%d > %v:%d seen by %d sniffer(s)\n", p.Src, p.SrcPort, p.Dst, p.DstPort, len(p.Obs))
		}
	}
	for _, o := range m.Offsets() {
		fmt.Printf("%s: known=%v offset=%dns method=%s\n", m.Sniffers()[o.Sniffer].Name, o.Known, o.Offset, o.Method)
	}
	st := m.Stats()
	fmt.Printf("records %d = packets %d + duplicates %d\n", st.Total.Records, st.Packets, st.Duplicates)
	for _, e := range m.Problems() {
		fmt.Println("problem:", e)
	}
	// Output:
	// 10.0.0.1:40000 > 10.0.0.2:80 seen by 2 sniffer(s)
	// 10.0.0.2:80 > 10.0.0.1:40000 seen by 2 sniffer(s)
	// 10.0.0.1:40000 > 10.0.0.2:80 seen by 2 sniffer(s)
	// 10.0.0.2:80 > 10.0.0.1:40000 seen by 1 sniffer(s)
	// example-a.pcap: known=true offset=0ns method=reference
	// example-b.pcapng: known=true offset=60000000000ns method=symmetric
	// records 7 = packets 4 + duplicates 3
}

// Reading the raw records of one file.
func ExampleReader() {
	r, err := pcapio.OpenFile("testdata/example-a.pcap")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var rec pcapio.Record
	var p pcapio.Packet
	for r.ReadRecord(&rec) == nil {
		pcapio.Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
		fmt.Printf("#%d at byte %d: %s %d bytes, payload %q\n", rec.Number, rec.Offset, pcapio.LinkTypeName(rec.LinkType), rec.WireLen, p.Payload)
	}
	// Output:
	// #1 at byte 24: EN10MB 59 bytes, payload "hello"
	// #2 at byte 99: EN10MB 58 bytes, payload "hi!!"
	// #3 at byte 173: EN10MB 57 bytes, payload "bye"
}
