// Package convolution is the convolution engine of Project 5 (Aguilera et
// al., SOSP 2003, section 5.2): every edge (sender, receiver) becomes a
// signal of message counts per time quantum; the messages out of a node
// are cross-correlated (by FFT) with the messages into it, and the spikes
// of the correlation give the delays at which the node passes messages
// on. Paths are built from root nodes by following those delays, and
// every hop is labelled with its delays.
//
// It needs only timestamps, senders and receivers: no CALL/RETURN marks.
// docs/causal-convolution.md describes the algorithm and its guards
// against noise; the tests compare it with a direct (non-FFT) correlation.
//
// This package must not know about file formats or rendering.
package convolution
