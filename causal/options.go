package causal

import "fmt"

// OptionError reports an engine option out of range, from an engine's
// constructor or its options' Validate. Option names the option as the
// engine's command-line flag and its key in Result.Params do ("max-delay",
// "overlap-penalty"), so that a command can name the flag.
type OptionError struct {
	// Engine is the engine's name.
	Engine string
	// Option is the option's flag name.
	Option string
	// Msg says what is wrong.
	Msg string
}

// Error returns the engine's name and the message.
func (e *OptionError) Error() string { return e.Engine + ": " + e.Msg }

// OptionErrorf returns an *OptionError for option of engine with a
// formatted message.
func OptionErrorf(engine, option, format string, args ...any) error {
	return &OptionError{Engine: engine, Option: option, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the options every engine shares, for the engine called
// engine: the error is an *OptionError.
func (o *Options) Validate(engine string) error {
	if !o.Rank.Valid() {
		return OptionErrorf(engine, "rank", "unknown rank metric %q", o.Rank)
	}
	return nil
}

// Valid reports whether m is one of RankMetrics.
func (m RankMetric) Valid() bool {
	for _, r := range RankMetrics {
		if r == m {
			return true
		}
	}
	return false
}
