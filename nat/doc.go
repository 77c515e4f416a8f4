// Package nat is the pipeline stage between pcapio and flows that finds
// network address translations from the captures alone and undoes them
// (WAP5 section 7.1).
//
// A NAT box rewrites addresses and ports but leaves the rest of a packet
// alone: payload, IPv4 identification, TCP sequence and acknowledgement
// numbers, flags and lengths. pcapio fingerprints exactly those fields as
// Packet.BodyKey. Two packets with the same body key but different
// addresses or ports, seen within a short window by sniffers on either side
// of the box, are the two copies of one packet: a match. The copy with the
// higher TTL (hop limit) was seen before the translation; when TTLs tie,
// the earlier clock-corrected timestamp decides, with less weight.
//
// One match is noise: UDP bodies repeat, bare TCP segments repeat, and two
// unrelated hosts can send identical bodies. So matches are weighed by how
// much randomness their body carries (TCP sequence numbers from a random
// ISN, a non-zero IPv4 identification, a payload that does not repeat on
// its connection), a body key seen on three or more connections within the
// window is ambiguous and ignored, and two copies with equal TTLs seen by
// the same capture point are two packets, not a translation. Matches
// accumulate per pair of connections (a link: one connection seen under two
// names) and links per translation rule (a Mapping: the outside name of an
// endpoint and its real, inside name). A mapping is accepted only when it
// has enough data-bearing matches and evidence, its links agree on which
// name is outside, and nearly every packet of its connections matched
// between the first and the last match (Score).
//
// Learning and applying are two passes: a Learner observes every packet in
// clock-corrected time order and returns a Table; a Canonicalizer built from
// the Table then rewrites packets of a second pass in place so that both
// copies of a translated segment carry the same canonical 4-tuple, named by
// the real (inside) endpoints, and reach flows as two observations of one
// segment. The outside names stay in the Table (Aliases) for reports.
//
// The Learner's memory is bounded by the packets of one window (the body
// index), the connections active within the idle timeout, and one record
// per translated connection (kept for the applying pass); see docs/nat.md.
//
// This package must not know about TCP streams, messages or causality.
package nat
