// Package whatif is the what-if performance model of Stewart and Shen,
// "Performance Modeling and System Management for Multi-component Online
// Services" (NSDI 2005, sections 2.3 and 3.2), applied to what wirepath
// reconstructed: per request and inter-node link the blocking round trips
// κ (with the handshakes of connections opened and the slow-start rounds
// of large messages) and bytes ν, per link the round trip γ and bandwidth
// ω the captures measured passively (trace.Meta.Links), per node an
// M/G/1 server whose utilisation and service time come from its busy
// periods — or, where a placement says which nodes share a host
// (Model.Place), the host's cores as one shared M/G/c processor-sharing
// server, each node's core time solved from its work at the host's
// utilisation. Build makes the Model, request by request from a result's
// instances and the trace they came from, or from the patterns' means;
// Model.Predict gives every request type's and pattern's mean latency
// after a Scenario of changes (link round trips and bandwidths, a host's
// links, co-location and separation, the load, a node's speed), by
// replaying each request's timeline and by the paper's sum, each with its
// inputs and an uncertainty from their spread. LinkProfiles is one
// pattern's profile, for the HTML report. docs/whatif.md describes the
// model, its validation on the testbed and its limits.
//
// It imports causal and trace only: it knows no engine, no file format
// and no rendering (the whatif command prints its predictions, report
// shows its link profiles).
package whatif
