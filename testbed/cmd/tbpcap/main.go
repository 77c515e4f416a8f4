// Command tbpcap gives a capture the clock and the losses of an imperfect
// sniffer, for the wirepath testbed (testbed/README.md): every timestamp t
// becomes t + offset + (t - anchor) × drift, and each packet is dropped with
// probability -loss (seeded, so a run can be repeated). It reads pcap
// (microsecond or nanosecond) and pcapng, and writes the same format with
// nanosecond timestamps, the link types and interfaces unchanged. It prints
// one JSON line with what it did, which the testbed's truth records.
//
//	tbpcap -offset 750ms -drift-ppm 40 -anchor 1700000000000000000 in.pcapng out.pcapng
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// clock maps a timestamp and decides which packets are lost.
type clock struct {
	offset int64
	ppm    float64
	anchor int64
	loss   float64
	rng    *rand.Rand
	in     int
	out    int
}

func (c *clock) keep() bool {
	c.in++
	if c.loss > 0 && c.rng.Float64() < c.loss {
		return false
	}
	c.out++
	return true
}

func (c *clock) at(t time.Time) time.Time {
	ns := t.UnixNano()
	if c.anchor == 0 {
		c.anchor = ns
	}
	d := float64(ns-c.anchor) * c.ppm / 1e6
	return time.Unix(0, ns+c.offset+int64(d))
}

func main() {
	offset := flag.Duration("offset", 0, "clock offset added to every timestamp")
	ppm := flag.Float64("drift-ppm", 0, "clock drift in parts per million (the clock gains this much per unit of time after -anchor)")
	anchor := flag.Int64("anchor", 0, "time (ns since the epoch) at which the drift is zero (0: the first packet)")
	loss := flag.Float64("loss", 0, "probability of dropping each packet")
	seed := flag.Uint64("seed", 1, "random seed of the losses")
	flag.Parse()
	if flag.NArg() != 2 || *loss < 0 || *loss >= 1 {
		log.Fatal("usage: tbpcap [-offset D] [-drift-ppm P] [-anchor NS] [-loss F] [-seed N] IN OUT")
	}
	c := &clock{offset: int64(*offset), ppm: *ppm, anchor: *anchor, loss: *loss, rng: rand.New(rand.NewPCG(*seed, 3))}
	if err := rewrite(c, flag.Arg(0), flag.Arg(1)); err != nil {
		log.Fatalf("tbpcap: %v", err)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"in": flag.Arg(0), "out": flag.Arg(1),
		"offset_ns": c.offset, "drift_ppm": c.ppm, "anchor_ns": c.anchor, "loss": c.loss,
		"packets_in": c.in, "packets_out": c.out, "dropped": c.in - c.out})
}

func rewrite(c *clock, inPath, outPath string) error {
	in, err := os.Open(inPath)
	if err != nil {
		return err
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 1<<20)
	magic, err := br.Peek(4)
	if err != nil {
		return fmt.Errorf("%s: %w", inPath, err)
	}
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	if binary.LittleEndian.Uint32(magic) == 0x0a0d0d0a {
		err = rewriteNg(c, br, bw)
	} else {
		err = rewritePcap(c, br, bw)
	}
	if err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", inPath, err)
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func rewritePcap(c *clock, r io.Reader, w io.Writer) error {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return err
	}
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(uint32(pr.Snaplen()), pr.LinkType()); err != nil {
		return err
	}
	for {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !c.keep() {
			continue
		}
		ci.Timestamp = c.at(ci.Timestamp)
		if err := pw.WritePacket(ci, data); err != nil {
			return err
		}
	}
}

func rewriteNg(c *clock, r io.Reader, w io.Writer) error {
	nr, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return err
	}
	var nw *pcapgo.NgWriter
	seen := 0 // interfaces of the input already added to the output
	for {
		data, ci, err := nr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for nw == nil || seen < nr.NInterfaces() {
			intf, err := nr.Interface(seen)
			if err != nil {
				return err
			}
			intf.TimestampResolution = 9
			intf.TimestampOffset = 0
			if nw == nil {
				nw, err = pcapgo.NewNgWriterInterface(w, intf, pcapgo.DefaultNgWriterOptions)
			} else {
				_, err = nw.AddInterface(intf)
			}
			if err != nil {
				return err
			}
			seen++
		}
		if !c.keep() {
			continue
		}
		ci.Timestamp = c.at(ci.Timestamp)
		if err := nw.WritePacket(ci, data); err != nil {
			return err
		}
	}
	if nw == nil {
		return errors.New("no packets")
	}
	return nw.Flush()
}
