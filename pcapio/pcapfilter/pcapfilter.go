// Package pcapfilter selects packet records with a capture filter
// expression as tcpdump and tshark take it ('tcp port 80 or udp port 53'):
// the expression is compiled by libpcap's own compiler (pcap_compile, from
// the libpcap shared library loaded at run time through
// github.com/ebitengine/purego, so building needs neither cgo nor
// libpcap-dev) into classic BPF, one program per link type, and run on
// each record's bytes by golang.org/x/net/bpf's virtual machine. Where no
// libpcap is installed, Compile says so (ErrNoLibpcap).
package pcapfilter

import (
	"fmt"
	"sync"

	"golang.org/x/net/bpf"
)

// SnapLen is the capture length the programs are compiled for: libpcap's
// (and tcpdump's) default, larger than any record pcapio reads whole.
const SnapLen = 262144

// Filter is a compiled filter expression. Its Match is safe for
// concurrent use (each input is read by a goroutine of its own).
type Filter struct {
	expr string
	mu   sync.Mutex
	vms  map[uint16]*bpf.VM // by pcap link type
	errs map[uint16]error   // link types the expression does not compile for
}

// Compile checks expr by compiling it for Ethernet (the program for
// another link type is compiled when a record of it first comes).
func Compile(expr string) (*Filter, error) {
	f := &Filter{expr: expr, vms: map[uint16]*bpf.VM{}, errs: map[uint16]error{}}
	if _, err := f.vm(1); err != nil {
		return nil, err
	}
	return f, nil
}

// String returns the expression.
func (f *Filter) String() string { return f.expr }

// vm returns the program for link type lt, compiling it the first time.
func (f *Filter) vm(lt uint16) (*bpf.VM, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vm, ok := f.vms[lt]; ok {
		return vm, nil
	}
	if err, ok := f.errs[lt]; ok {
		return nil, err
	}
	raw, err := compile(lt, f.expr)
	var vm *bpf.VM
	if err == nil {
		insns, ok := bpf.Disassemble(raw)
		if !ok {
			err = fmt.Errorf("filter %q: libpcap's program has instructions the BPF machine does not run", f.expr)
		} else if vm, err = bpf.NewVM(insns); err != nil {
			err = fmt.Errorf("filter %q: %w", f.expr, err)
		}
	}
	if err != nil {
		f.errs[lt] = err
		return nil, err
	}
	f.vms[lt] = vm
	return vm, nil
}

// Match reports whether the record (its captured bytes, of link type
// linkType) passes the filter. A record of a link type the expression
// cannot be compiled for (an 'ether' test on raw IP frames) does not
// pass; the error says why, once per link type (it is sticky).
func (f *Filter) Match(linkType uint16, data []byte, wireLen int) (bool, error) {
	vm, err := f.vm(linkType)
	if err != nil {
		return false, err
	}
	n, err := vm.Run(data)
	if err != nil {
		return false, nil // the program read past the captured bytes: no match, as in the kernel
	}
	return n > 0, nil
}
