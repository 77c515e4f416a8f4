package pipeline

import (
	"fmt"
	"slices"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// checkRun returns the warnings a user must see about a finished run,
// beyond the bad input (Problems) and reconcile's own: clocks nothing ties
// to the reference, nodes whose side of their messages no capture point
// saw, holes in TCP streams and connections whose start was missed. Each
// says what it costs the results.
func checkRun(cfg *Config, res *Result, tr *trace.Trace) []string {
	var out []string
	for _, c := range tr.Meta.Clocks {
		if c.Known {
			continue
		}
		switch {
		case c.Kind == "sniffer" && cfg.Capture.NoOffsets:
			out = append(out, fmt.Sprintf("sniffer %s: its clock offset against %s was neither estimated (offsets are off) nor given; its times are not comparable with the others', so network delays across it are missing and copies of a packet it shares with another sniffer may not be recognised: give it with --offset %s=DURATION", c.Name, c.Reference, c.Name))
		case c.Kind == "sniffer":
			out = append(out, fmt.Sprintf("sniffer %s: its clock offset is unknown (it shares no packet and no translated connection with %s); its times are not comparable with the others', so network delays across it are missing: give it with --offset %s=DURATION", c.Name, c.Reference, c.Name))
		default:
			out = append(out, fmt.Sprintf("traced host %s: its clock offset is unknown (nothing it did was also sniffed); its network delays are missing", c.Name))
		}
	}
	out = append(out, oneSided(tr)...)
	if f := res.Flows; f != nil {
		if gaps := f.GapsAcked + f.GapsTimeout + f.GapsLimit + f.GapsEnd; gaps > 0 {
			out = append(out, fmt.Sprintf("%d gaps in TCP streams (%d bytes no sniffer saw): messages around a gap may be cut or joined wrongly", gaps, f.GapBytes))
		}
		if n := f.MidStream - f.MidStreamDecoded - f.MidStreamHTTP; n > 0 {
			out = append(out, fmt.Sprintf("%d connections were already open when the capture started and no protocol was found on them: who called whom on them is guessed from the ports", n))
		}
		out = append(out, protocolWarnings(f)...)
	}
	return out
}

// maxOneSided bounds the nodes oneSided names one by one.
const maxOneSided = 5

// oneSided warns about nodes whose end of some of their messages no
// capture point (or syscall trace) saw: their own delays cannot be
// measured there, and the engines show them as untraced (a WAP5 diamond).
func oneSided(tr *trace.Trace) []string {
	type tally struct{ msgs, unseen int }
	by := map[trace.Sym]*tally{}
	// A connection's messages come in runs: the last sender's and
	// receiver's tallies are remembered.
	var memoS [2]trace.Sym
	var memoT [2]*tally
	get := func(side int, s trace.Sym) *tally {
		if memoT[side] != nil && memoS[side] == s {
			return memoT[side]
		}
		t := by[s]
		if t == nil {
			t = &tally{}
			by[s] = t
		}
		memoS[side], memoT[side] = s, t
		return t
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.SrcNode != 0 {
			t := get(0, m.SrcNode)
			t.msgs++
			if !m.SendTS.Known() {
				t.unseen++
			}
		}
		if m.DstNode != 0 {
			t := get(1, m.DstNode)
			t.msgs++
			if !m.RecvTS.Known() {
				t.unseen++
			}
		}
	}
	type row struct {
		name         string
		msgs, unseen int
	}
	var rows []row
	for s, t := range by {
		if t.unseen > 0 {
			rows = append(rows, row{tr.Syms.String(s), t.msgs, t.unseen})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.unseen != b.unseen {
			return b.unseen - a.unseen
		}
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	var out []string
	for i, r := range rows {
		if i == maxOneSided {
			out = append(out, fmt.Sprintf("... and %d more nodes seen on one side only", len(rows)-maxOneSided))
			break
		}
		what := "some of its messages"
		if r.unseen == r.msgs {
			what = "any of its messages"
		}
		out = append(out, fmt.Sprintf("node %s is seen on one side only: no capture point on its side saw %s (%d of %d); its own delays there are unknown (◇ in the patterns)", r.name, what, r.unseen, r.msgs))
	}
	return out
}

// protocolWarnings says what the protocols' framing could not do: TLS
// connections not decrypted (their requests are opaque messages between
// direction changes), decoders that rejected a connection detected as
// theirs, requests a decoder saw no response to.
func protocolWarnings(f *flows.Stats) []string {
	var out []string
	if p := f.Protocols["tls"]; p != nil && p.Decrypted < p.Conns {
		why := "give their key log with --tls-keylog"
		if p.NoKeyLog == 0 {
			why = "the key log has no (or no good) secrets for them"
		}
		out = append(out, fmt.Sprintf("%d of %d TLS connections were not decrypted (%s): their messages are runs of records between direction changes, not the requests inside", p.Conns-p.Decrypted, p.Conns, why))
	}
	if f.DetectRejected > 0 {
		out = append(out, fmt.Sprintf("%d connections looked like a protocol (or were named one with --proto) that its decoder then rejected: they are cut at direction changes", f.DetectRejected))
	}
	return out
}
