package cmdutil

import (
	"github.com/wirepath/wirepath/frames"
	"github.com/wirepath/wirepath/trace"
)

// BuildFrames maps the messages of tr to the frames of the merged capture
// at pcap (wirepath merge, analyze --pcap-out) and says how many it found.
func BuildFrames(ios *IOStreams, pcap string, tr *trace.Trace) (*frames.Index, error) {
	x, err := frames.BuildFile(pcap, tr, frames.Options{})
	if err != nil {
		return nil, err
	}
	s := x.Stats
	ios.Infof("%s: %d frames, %d with a message's payload, %d of %d messages found", pcap, s.Frames, s.Matched, s.Messages, len(tr.Messages))
	if s.Skipped > 0 {
		ios.Warnf("%s: %d bad records skipped", pcap, s.Skipped)
	}
	return x, nil
}
