package cmdutil

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// Profile is what the hidden --cpuprofile and --memprofile flags ask for:
// pprof profiles of the whole command (docs/performance.md says how to
// read them per stage).
type Profile struct {
	CPU, Mem string
	cpu      *os.File
}

// Register adds the hidden profiling flags to fs.
func (p *Profile) Register(fs *pflag.FlagSet) {
	fs.StringVar(&p.CPU, "cpuprofile", "", "write a pprof CPU profile of the command to `FILE`")
	fs.StringVar(&p.Mem, "memprofile", "", "write a pprof heap profile (allocations and what is live at the end) to `FILE`")
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("memprofile")
}

// Start starts the CPU profile, if asked for, and sets the rate of the
// heap profile.
func (p *Profile) Start() error {
	if p.Mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	if p.CPU == "" {
		return nil
	}
	f, err := os.Create(p.CPU)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile: %w", err)
	}
	p.cpu = f
	return nil
}

// Stop ends the CPU profile and writes the heap profile, if asked for.
func (p *Profile) Stop() error {
	var first error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		first = p.cpu.Close()
		p.cpu = nil
	}
	if p.Mem != "" {
		f, err := os.Create(p.Mem)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil && first == nil {
			first = err
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		p.Mem = ""
	}
	return first
}
