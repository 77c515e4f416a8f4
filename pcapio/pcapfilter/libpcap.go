package pcapfilter

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"golang.org/x/net/bpf"
)

// libpcap's shared library names, most specific first: Debian and
// Ubuntu ship libpcap.so.0.8 (libpcap0.8), others libpcap.so.1.
var libNames = []string{"libpcap.so.0.8", "libpcap.so.1", "libpcap.so", "libpcap.dylib"}

// netmaskUnknown is PCAP_NETMASK_UNKNOWN: no IPv4 netmask for 'broadcast'.
const netmaskUnknown = 0xffffffff

// bpfProgram is struct bpf_program: the instruction count and a pointer
// to the instructions, which libpcap allocates and pcap_freecode frees.
type bpfProgram struct {
	n     uint32
	insns unsafe.Pointer
}

// bpfInsn is struct bpf_insn.
type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// libpcap holds the functions of the library, loaded once.
var libpcap struct {
	once     sync.Once
	err      error
	mu       sync.Mutex // pcap_compile is not re-entrant in older libpcaps
	openDead func(linktype, snaplen int32) uintptr
	compile  func(p uintptr, prog *bpfProgram, expr string, optimize int32, netmask uint32) int32
	freecode func(prog *bpfProgram)
	geterr   func(p uintptr) string
	close    func(p uintptr)
}

// ErrNoLibpcap says no libpcap shared library could be loaded.
var ErrNoLibpcap = errors.New("capture filters need libpcap's compiler, and no libpcap shared library was found (install libpcap0.8, which tcpdump depends on)")

func loadLibpcap() {
	var lib uintptr
	var err error
	for _, name := range libNames {
		if lib, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
	}
	if err != nil {
		libpcap.err = fmt.Errorf("%w: %v", ErrNoLibpcap, err)
		return
	}
	defer func() {
		if r := recover(); r != nil { // RegisterLibFunc panics on a missing symbol
			libpcap.err = fmt.Errorf("libpcap: %v", r)
		}
	}()
	purego.RegisterLibFunc(&libpcap.openDead, lib, "pcap_open_dead")
	purego.RegisterLibFunc(&libpcap.compile, lib, "pcap_compile")
	purego.RegisterLibFunc(&libpcap.freecode, lib, "pcap_freecode")
	purego.RegisterLibFunc(&libpcap.geterr, lib, "pcap_geterr")
	purego.RegisterLibFunc(&libpcap.close, lib, "pcap_close")
}

// compile runs libpcap's compiler for link type lt. The library is
// loaded at run time, so the build needs neither cgo nor libpcap-dev.
func compile(lt uint16, expr string) ([]bpf.RawInstruction, error) {
	libpcap.once.Do(loadLibpcap)
	if libpcap.err != nil {
		return nil, libpcap.err
	}
	libpcap.mu.Lock()
	defer libpcap.mu.Unlock()
	p := libpcap.openDead(int32(lt), SnapLen)
	if p == 0 {
		return nil, fmt.Errorf("filter %q: libpcap cannot compile for link type %d", expr, lt)
	}
	defer libpcap.close(p)
	var prog bpfProgram
	if libpcap.compile(p, &prog, expr, 1, netmaskUnknown) != 0 {
		return nil, fmt.Errorf("filter %q (link type %d): %s", expr, lt, libpcap.geterr(p))
	}
	defer libpcap.freecode(&prog)
	insns := unsafe.Slice((*bpfInsn)(prog.insns), prog.n)
	raw := make([]bpf.RawInstruction, len(insns))
	for i, in := range insns {
		raw[i] = bpf.RawInstruction{Op: in.code, Jt: in.jt, Jf: in.jf, K: in.k}
	}
	return raw, nil
}
