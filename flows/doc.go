// Package flows is the stage of the wirepath pipeline that turns packets
// into write-level messages (WAP5 section 2.3).
//
// It reads pcapio.Packets in corrected time order, deduplicated across
// sniffers and with NAT already undone, and:
//
//   - reassembles IPv4 and IPv6 fragments;
//   - reassembles each TCP connection on its canonical endpoints: SYN,
//     SYN-ACK, FIN and RST, retransmissions and overlaps (the first copy
//     wins; conflicting copies are counted), out-of-order segments, holes
//     (given up as gaps when the receiver acknowledges bytes the capture
//     missed, after a reorder timeout, over the buffer limits or at the
//     end; the message is marked incomplete and the stream goes on),
//     sequence wraparound, connections open before the capture began, and
//     connections that end without FIN (idle timeout, end of input);
//   - tells a retransmission (a capture point sees bytes it saw before)
//     from another sighting of the same segment (a capture point sees
//     bytes for the first time that another point already delivered, such
//     as the other side of a NAT) by tracking, per capture point, which
//     bytes it has seen;
//   - detects each TCP connection's application protocol from its first
//     bytes (or Config.Ports) and frames HTTP/2 and gRPC, TLS (decrypted
//     with Config.KeyLog), PostgreSQL, MySQL, Redis, memcached and Kafka
//     with the decoders of package proto: one message per protocol
//     message, even where several interleave on the connection (HTTP/2
//     streams), timed by the packets that carried its first and last byte,
//     with its label, status, stream and evidence;
//   - cuts the other connections' bytes into messages at direction
//     changes, at pauses longer than Config.SplitPause, and at HTTP/1.x and
//     DNS message boundaries, coalescing the sender's writes into fat
//     messages as WAP5 does; a UDP datagram is one message;
//   - labels messages CALL or RETURN with a call id: on TCP the side that
//     opened the connection calls (inferred from HTTP/DNS content or the
//     ports when the handshake was not seen, unknown otherwise), HTTP
//     pairs pipelined requests and responses in order, DNS by its
//     transaction id, the decoded protocols by their Units' Key (the
//     HTTP/2 stream id, the Kafka correlation id, the order of a serial
//     protocol's requests);
//   - records for every message, at every capture point that saw it, when
//     its first and last bytes passed (Sighting), so that reconcile can
//     take the send time from the point nearest the sender and the receive
//     time from the point nearest the receiver;
//   - keeps per-connection passive figures in the spirit of MSHN
//     (ConnStats): handshake and call/return round trips, and the
//     throughput of multi-segment messages from the first segment to the
//     last.
//
// Memory is bounded by the open connections and the out-of-order data,
// with limits (Config) and counters (Stats) for both. Stats balances: what
// came in equals what went out plus what was dropped, by reason.
//
// The stage is pull-style (Reader.Next) on top of a push-style Assembler.
// Messages come out in the order they ended, each after Config.Settle so
// that late sightings can still join it (a whole decoded message of a
// single-point capture as soon as its receiver acknowledged it).
//
// flows must not know about node names or causality.
package flows
