// Package http2 decodes one HTTP/2 connection (h2c, or h2 inside TLS once
// proto/tls has decrypted it) into proto.Units: one Unit per stream and
// direction, so that gRPC's concurrent calls over one connection come out
// as one request and one response each, paired by stream id.
//
// A Decoder is fed the in-order bytes of each direction of one connection
// with their stream offsets (Feed), told about bytes the capture lost
// (Gap), and closed at the connection's end (Close); Next pulls the Units
// decoded so far. It knows bytes and offsets only: flows times the Units.
//
// What it reports:
//
//   - KindRequest: the frames the client sent on one stream (HEADERS,
//     CONTINUATION, DATA and trailers) up to END_STREAM; Key is the stream
//     id; Start is the offset of the stream's first frame header, End one
//     past its last frame; Label is "METHOD /path" with ids in the path
//     replaced by {id}, or "grpc /package.Service/Method" for gRPC.
//   - KindResponse: the same for the server's side of the stream, Key the
//     same stream id; Label is the :status ("200") or, for gRPC, "grpc "
//     and the grpc-status code name ("grpc OK", "grpc NOT_FOUND"); Status
//     is the HTTP status, or the grpc-status code for gRPC.
//   - KindOneWay: a stream the server pushed (PUSH_PROMISE), Key 0.
//   - KindControl: the client preface and every SETTINGS, PING,
//     WINDOW_UPDATE, PRIORITY, RST_STREAM, GOAWAY and unknown-type frame,
//     one Unit each, labelled with the frame type ("RST_STREAM CANCEL").
//
// A stream reset by RST_STREAM ends both its Units at the reset; their
// labels end in " reset".
//
// Frames: the payloads of the frames that are held are read in place
// (parseFrame, which accepts what x/net's Framer accepts).
//
// HPACK: each direction has its own decoder (hpackDecoder: x/net's
// hpack.Decoder's behaviour, checked by a differential fuzz test, with a
// dynamic table that keeps its fields' bytes in one buffer and allocates
// nothing once warm), with the dynamic table bounded by Config.MaxHeaderTable and the decoded
// header list of a block bounded by Config.MaxHeaderList (fields past it
// are decoded, to keep the table in step, but not looked at). A header
// block that is lost or cannot be decoded poisons that direction's table:
// from then on its Units are framed exactly but carry no label, status or
// evidence, until the peer's encoder empties its table with a dynamic
// table size update of 0 at the start of a block (the only moment the
// table is known again; most encoders never do it, so in practice a
// poisoned direction stays poisoned for the rest of the connection).
//
// Loss: a Gap inside the payload of a DATA frame whose header was seen
// costs only payload bytes (the stream's Unit is still reported: its
// bounds are known). A Gap inside any other frame loses that frame; if it
// was a header block, its stream is lost and the direction's HPACK table
// is poisoned. A Gap that crosses a frame boundary loses the framing: the
// decoder poisons the direction's table and resumes at the first
// plausible frame header confirmed by the two headers after it (a
// candidate waiting for its confirmation does not hold up a later one
// confirmed; at Close, a chain of frames ending exactly with the bytes is
// confirmed). Streams open in that direction at the loss are kept and
// reported if they end later (their bounds are known whatever frames of
// theirs were in the gap); those that never end most likely had their
// END_STREAM in the gap and are lost at Close. A stream half not yet
// begun at the loss, or opened while its direction looks for its
// framing, that begins with a DATA frame lost its header block: it is
// reported from there, incomplete; one that never begins is lost at
// Close. The client's streams whose every frame was lost are found by
// their ids: a client opens its streams in order, so the ids it passes
// over after a loss (up to the next it names, or the next the server
// answers) are requests lost whole. Every message lost is counted in
// Stats.StreamsLost. The other direction is not affected.
//
// Bounds: a Decoder holds at most Config.MaxBuffered bytes of one frame
// per direction (DATA payloads are never held), a resync window of
// resyncWindow bytes, the HPACK tables, and Config.MaxStreams open
// streams (beyond that the oldest is dropped and counted).
//
// The Decoder is not safe for concurrent use.
package http2
