// Package frames leads from a trace's messages back to the packets: it
// maps each message to the numbers of the frames that carried it in a
// merged capture (the pcapng `wirepath merge` writes, or `wirepath
// analyze --pcap-out`), as Wireshark numbers them, and writes the
// Wireshark display filter that selects a set of frames.
//
// The capture is read once. A frame belongs to a message when it carries
// payload between the message's endpoints, or between endpoints the
// trace's NAT aliases say are the same (both twins of a translated
// packet), in the message's direction and transport, within the
// message's time window widened by the trace's clock offsets and a
// tolerance; a frame that fits several messages of one connection goes
// to the one whose window is nearest. It stands after the front half
// (pcapio, trace) and knows nothing of engines or results.
package frames
