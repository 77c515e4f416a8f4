// Package pcapio reads packet captures from many sniffers and turns them into
// one time-ordered stream of deduplicated, clock-corrected packet records.
//
// It reads classic pcap and pcapng (plain, gzip or zstd), decodes the few
// header fields the pipeline needs into a compact Packet without allocating
// per packet, fingerprints each packet (a wire key that is the same at every
// capture point on one path, and a body key that survives NAT), estimates
// each sniffer's clock offset against a reference sniffer, merges all inputs
// in corrected time order and groups the copies of one wire packet seen by
// several sniffers into one Packet that keeps every Observation. It also
// writes pcapng.
//
// This package must not know about flows, messages or causality.
package pcapio
