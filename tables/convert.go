package tables

import (
	"net/netip"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// Recorder turns the pipeline's records into rows of a Writer: packets
// into observations, flows' messages and connections, and a trace's
// messages. Address strings are cached (up to maxNames, then the cache
// starts over), so a packet costs no allocation once its addresses were
// seen.
type Recorder struct {
	W *Writer
	// Sniffers are the sniffers' names by pcapio.SnifferID.
	Sniffers []string

	packets, flowMsgs int64
	addrs             map[netip.Addr]string
	eps               map[netip.AddrPort]string
	row               Observation
}

const maxNames = 1 << 16

// NewRecorder returns a Recorder writing to w.
func NewRecorder(w *Writer, sniffers []string) *Recorder {
	return &Recorder{W: w, Sniffers: sniffers, addrs: map[netip.Addr]string{}, eps: map[netip.AddrPort]string{}}
}

func (r *Recorder) addr(a netip.Addr) string {
	if s, ok := r.addrs[a]; ok {
		return s
	}
	if len(r.addrs) >= maxNames {
		clear(r.addrs)
	}
	s := a.String()
	r.addrs[a] = s
	return s
}

func (r *Recorder) endpoint(a netip.AddrPort) string {
	if s, ok := r.eps[a]; ok {
		return s
	}
	if len(r.eps) >= maxNames {
		clear(r.eps)
	}
	s := a.String()
	r.eps[a] = s
	return s
}

func (r *Recorder) sniffer(id pcapio.SnifferID) string {
	if int(id) < len(r.Sniffers) {
		return r.Sniffers[id]
	}
	return ""
}

// Packet adds a row to observations for every sighting of p (a decoded
// packet; others are counted by pcapio and not written).
func (r *Recorder) Packet(p *pcapio.Packet) {
	r.packets++
	if p.Status != pcapio.StatusOK {
		return
	}
	o := &r.row
	*o = Observation{Packet: r.packets, Proto: int32(p.Proto), Src: r.addr(p.Src), Dst: r.addr(p.Dst),
		SrcPort: int32(p.SrcPort), DstPort: int32(p.DstPort), WireLen: int32(p.WireLen), PayloadLen: int32(p.PayloadLen),
		IPID: int64(p.IPID)}
	if p.Proto == pcapio.ProtoTCP {
		o.TCPFlags, o.Seq, o.Ack = int32(p.TCPFlags), int64(p.Seq), int64(p.Ack)
	}
	for _, ob := range p.Obs {
		o.TS, o.SnifferTS, o.Sniffer, o.TTL = ob.Corrected, ob.TS, r.sniffer(ob.Sniffer), int32(ob.TTL)
		r.W.Observation(o)
	}
}

// FlowMessage adds flows' message m to messages: its times are the
// sender side's first sighting and the receiver side's last.
func (r *Recorder) FlowMessage(m *flows.Message) {
	row := Message{Index: r.flowMsgs, Src: r.endpoint(m.Src), Dst: r.endpoint(m.Dst), Proto: m.Proto.String(),
		App: m.App.String(), Kind: m.Kind.String(), Bytes: m.Bytes, Conn: int64(m.Conn), Incomplete: m.Incomplete,
		MsgID: MsgID(m.ID())}
	r.flowMsgs++
	if s := m.SenderSide(); s != nil {
		row.SendTS = s.First
	}
	if s := m.ReceiverSide(); s != nil {
		row.RecvTS = s.Last
	}
	if !m.Call.IsZero() {
		row.CallID = m.Call.String()
	}
	r.W.Message(&row)
}

// Conn adds flows' connection cs to connections.
func (r *Recorder) Conn(cs *flows.ConnStats) {
	row := Connection{Conn: int64(cs.Conn), Proto: cs.Proto, Client: r.endpoint(cs.Client), Server: r.endpoint(cs.Server),
		Caller: cs.Caller, MidStream: cs.MidStream, Start: cs.StartNS, End: cs.EndNS, EndReason: cs.End,
		ClientPackets: cs.ClientPackets, ServerPackets: cs.ServerPackets, ClientBytes: cs.ClientBytes, ServerBytes: cs.ServerBytes,
		ClientMessages: cs.ClientMessages, ServerMessages: cs.ServerMessages, Gaps: cs.Gaps, GapBytes: cs.GapBytes,
		RetransBytes: cs.RetransBytes, RTTs: cs.RTT.N}
	if cs.RTT.N > 0 {
		row.RTTP50 = cs.RTT.P50NS
	}
	r.W.Connection(&row)
}

// TraceRows says which of a trace's messages TraceMessages writes and
// how it names them; the zero value writes every message, without msg_id.
type TraceRows struct {
	// Sources, by trace index, are the flows messages the messages began
	// with (reconcile.Report.Sources): their msg_id.
	Sources []flows.MessageID
	// Owned, when not nil, keeps only the messages it marks (a window's
	// own, pipeline.Window.Owned: the rest are its neighbours').
	Owned []bool
	// WindowStart is the window's core start in a windowed run, else 0.
	WindowStart int64
}

// TraceMessages adds the messages of ms that rows keeps to messages,
// Index being the index in ms.
func (r *Recorder) TraceMessages(ms trace.Messages, rows TraceRows) {
	syms := ms.Symbols()
	name := func(s trace.Sym) string {
		if s == 0 {
			return ""
		}
		return syms.String(s)
	}
	var m trace.Message
	for i := range ms.Len() {
		if rows.Owned != nil && !rows.Owned[i] {
			continue
		}
		ms.Read(i, &m)
		row := Message{Index: int64(i), Src: name(m.Src), Dst: name(m.Dst), SrcNode: name(m.SrcNode), DstNode: name(m.DstNode),
			Proto: m.Proto.String(), Kind: m.Kind.String(), CallID: name(m.CallID), Bytes: m.Bytes, Conn: int64(m.Conn),
			Label: name(m.Label), ReqID: name(m.ReqID), WindowStart: rows.WindowStart}
		if i < len(rows.Sources) {
			row.MsgID = MsgID(rows.Sources[i])
		}
		if m.SendTS.Known() {
			row.SendTS = int64(m.SendTS)
		}
		if m.RecvTS.Known() {
			row.RecvTS = int64(m.RecvTS)
		}
		r.W.Message(&row)
		if r.W.err != nil {
			return
		}
	}
}
