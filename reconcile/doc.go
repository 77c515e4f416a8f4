// Package reconcile is the stage of the wirepath pipeline between flows
// (and the syscall traces of package preload) and the engines: it turns
// sniffed write-level messages and traced socket calls into one trace of
// logical messages (WAP5 section 4), one per real message, each with the
// time it left its sender and the time it reached its receiver.
//
// Its contract:
//
//   - Every host (an address, or every address a syscall trace shows one
//     machine using) gets a home capture point: the one that sees its
//     messages whole and on its side of every router (the highest TTL of
//     what it sends, the lowest of what it receives), as WAP5 did for
//     Slurpee (section 7); failing that the one that sees most.
//   - A message takes its send time (first byte) from the sender's home
//     point and its receive time (last byte) from the receiver's; where
//     the home point missed it, from the traced call, else from another
//     point on that end's side; a message seen on one side only keeps one
//     time, the other is trace.NoTime.
//   - Traced calls are matched to the sniffed bytes of the same connection
//     (its endpoints, across NAT through Options.Canonical, and the byte
//     ranges of the calls within each direction's stream), so that
//     messages carry process names and the application's write boundaries
//     (Options.Boundaries); traced traffic no sniffer saw (UNIX sockets,
//     loopback, hosts without a sniffer) becomes messages too. Every call is
//     accounted for: matched, made a message of its own (and why), or
//     dropped (and why).
//   - Nodes are named by host, role (host and fixed port) or process
//     (Options.Naming, WAP5 section 2.5); ports are fixed or ephemeral as in
//     WAP5 section 2.5.1, with the evidence flows and the traces add (who
//     opened a connection, who accepted it). Endpoints keep their real
//     ports; engines aggregate ephemeral ports and clients themselves.
//   - Clock offsets between the clocks the times come from (sniffers after
//     pcapio's correction, traced hosts) are estimated from events seen on
//     two clocks in both directions, assuming symmetric smallest delays
//     (WAP5 section 5.2, Paxson) and keeping the shortest round trip
//     (MSHN), with the uncertainty that bounds the error whatever the
//     asymmetry; chained along the path of least uncertainty to the
//     reference clock (package clock does the arithmetic). Each node keeps one clock (its home sniffer's, or
//     its traced host's when no sniffer saw it), so node delays never mix
//     clocks; trace.Meta gives each clock's offset (Clocks) and each
//     node's (Offsets, against a reference node).
//
// A Reconciler collects the messages of a whole run (AddMessage, AddConn)
// and reconciles them in Finish, because home points, fixed ports and clock
// offsets all depend on the whole run; Finish runs in named phases (hosts,
// logical messages, ends and ports, clocks, nodes, the trace, the report).
// The Report accounts for every sniffed message and every traced call
// (Check verifies it).
//
// This package must not know about packets or inference: it reads flows'
// messages and preload's tables and does not import pcapio (capture
// points are flows.Points, sniffers are named by index, and NAT lookups
// take trace.IPProtoTCP/UDP).
package reconcile
