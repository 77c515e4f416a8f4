//go:build !cgo || nolibpcap

package pcapfilter

import (
	"errors"

	"golang.org/x/net/bpf"
)

// compile has no compiler: this binary was built without libpcap.
func compile(uint16, string) ([]bpf.RawInstruction, error) {
	return nil, errors.New("capture filters need libpcap's compiler: this wirepath was built without cgo (install libpcap-dev and a C compiler, then build again)")
}
