package http2

import (
	"fmt"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

// Stats are a Decoder's counters. Every byte fed is, at any moment, in
// exactly one of Framed, Damaged, Skipped, Truncated and Pending (Check).
type Stats struct {
	In        int64 // bytes fed (overlaps excluded)
	Framed    int64 // bytes of the preface and of whole frames
	Damaged   int64 // bytes of frames a gap hit (other than DATA payload gaps)
	Skipped   int64 // bytes passed over: not HTTP/2, or searched through after a loss
	Truncated int64 // bytes of frames cut off by Close
	Pending   int64 // bytes held: part of a frame, server bytes while detecting, the resync window
	Overlap   int64 // bytes fed again (ignored)
	GapBytes  int64 // bytes lost (Gap)

	Frames        [10]int64 // whole frames by type: DATA, HEADERS, ..., CONTINUATION
	UnknownFrames int64     // frames of a type RFC 9113 does not define

	Requests  int64 // KindRequest Units
	Responses int64 // KindResponse Units
	Pushes    int64 // KindOneWay Units (pushed streams)
	Controls  int64 // KindControl Units
	Streams   int64 // streams opened

	Resets       int64 // RST_STREAM frames
	GoAways      int64 // GOAWAY frames
	ConnStalls   int64 // times a sender used up the connection's flow-control window
	StreamStalls int64 // times a sender used up a stream's flow-control window

	HPACKErrors        int64 // header blocks the HPACK decoder rejected
	HPACKPoisoned      int64 // times a direction's HPACK table stopped being known
	HPACKRecovered     int64 // times it was known again (a size update to 0)
	HeaderListTooLarge int64 // header blocks larger than MaxHeaderList

	MalformedFrames    int64 // frames x/net's Framer rejected, or impossible lengths
	TooLargeFrames     int64 // non-DATA frames larger than MaxBuffered
	ContinuationErrors int64 // CONTINUATION frames out of place, or missing
	FramesLost         int64 // frames hit by a gap, malformed, too large or cut off
	DataBytesLost      int64 // DATA payload bytes lost inside frames whose header was seen
	FramingLost        int64 // times a direction lost its framing
	Resyncs            int64 // times it found it again

	OrphanFrames            int64 // DATA frames of streams never seen
	ClosedStreamFrames      int64 // frames of streams already closed
	StreamsLost             int64 // stream halves lost (never reported)
	StreamsEvicted          int64 // streams dropped beyond MaxStreams
	OpenAtClose             int64 // stream halves reported unfinished at Close
	ResponsesWithoutRequest int64 // responses that began before any frame of their request was seen
}

func (st *Stats) countFrame(t xhttp2.FrameType) {
	if int(t) < len(st.Frames) {
		st.Frames[t]++
	}
}

// Check verifies that the byte accounting balances.
func (st Stats) Check() error {
	if sum := st.Framed + st.Damaged + st.Skipped + st.Truncated + st.Pending; sum != st.In {
		return fmt.Errorf("http2: %d bytes in, %d framed + %d damaged + %d skipped + %d truncated + %d pending = %d",
			st.In, st.Framed, st.Damaged, st.Skipped, st.Truncated, st.Pending, sum)
	}
	return nil
}

// Summary returns the counters every decoder shares (see proto.Summary):
// lost bytes are the gaps, which no frame's byte count includes.
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return proto.Summary{In: st.In, GapBytes: st.GapBytes, Framed: st.Framed,
		Unframed: st.Damaged + st.Skipped + st.Truncated, Lost: st.GapBytes, Pending: st.Pending,
		Malformed: st.MalformedFrames + st.TooLargeFrames + st.ContinuationErrors + st.HPACKErrors,
		Losses:    st.FramingLost, Resyncs: st.Resyncs, Unpaired: st.ResponsesWithoutRequest, Err: st.Check()}
}
