package cmdutil

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/spf13/pflag"
)

// Profile is what the hidden --cpuprofile, --memprofile and
// --memprofile-every flags ask for: pprof profiles of the whole command
// (docs/performance.md says how to read them per stage), and heap
// profiles during it, to see what grows.
type Profile struct {
	CPU, Mem string
	// MemEvery, with Mem, also writes Mem.1, Mem.2, ... every MemEvery
	// of wall time: what is live then, after a collection.
	MemEvery time.Duration
	cpu      *os.File
	stop     chan struct{}
	done     chan struct{}
}

// Register adds the hidden profiling flags to fs.
func (p *Profile) Register(fs *pflag.FlagSet) {
	fs.StringVar(&p.CPU, "cpuprofile", "", "write a pprof CPU profile of the command to `FILE`")
	fs.StringVar(&p.Mem, "memprofile", "", "write a pprof heap profile (allocations and what is live at the end) to `FILE`")
	fs.DurationVar(&p.MemEvery, "memprofile-every", 0, "with --memprofile FILE, also write FILE.1, FILE.2, ... (what is live then) every `DURATION`")
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("memprofile")
	_ = fs.MarkHidden("memprofile-every")
}

// Start starts the CPU profile, if asked for, and sets the rate of the
// heap profile.
func (p *Profile) Start() error {
	if p.Mem != "" {
		runtime.MemProfileRate = 64 << 10
		if p.MemEvery > 0 {
			p.stop, p.done = make(chan struct{}), make(chan struct{})
			go p.snapshots(p.Mem, p.MemEvery)
		}
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

// snapshots writes what is live to mem.1, mem.2, ... every d until Stop.
func (p *Profile) snapshots(mem string, d time.Duration) {
	defer close(p.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		runtime.GC()
		f, err := os.Create(fmt.Sprintf("%s.%d", mem, n))
		if err != nil {
			return
		}
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

// Stop ends the CPU profile and writes the heap profile, if asked for.
func (p *Profile) Stop() error {
	if p.stop != nil {
		close(p.stop)
		<-p.done
		p.stop = nil
	}
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
