package trace

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	var s Symbols
	tests := []struct {
		name string
		in   []uint64
		want []uint64
	}{
		{"empty", nil, nil},
		{"sorted and de-duplicated", []uint64{9, 3, 9, 1, 3}, []uint64{1, 3, 9}},
		{"one", []uint64{42}, []uint64{42}},
	}
	refs := make([]TokenRef, len(tests))
	for i, tc := range tests {
		in := slices.Clone(tc.in)
		r, err := s.AddTokens(in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("%s: AddTokens modified its argument", tc.name)
		}
		if (r == 0) != (len(tc.want) == 0) {
			t.Errorf("%s: ref %d for %d tokens", tc.name, r, len(tc.want))
		}
		refs[i] = r
	}
	// Read back after every set was added: later additions must not move
	// or change earlier sets.
	for i, tc := range tests {
		if got := s.Tokens(refs[i]); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Tokens = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := s.Tokens(TokenRef(s.TokenSets() + 1)); got != nil {
		t.Errorf("Tokens of an unknown ref = %v, want nil", got)
	}
}

func TestTokensCap(t *testing.T) {
	var s Symbols
	in := make([]uint64, MaxTokens+10)
	for i := range in {
		in[i] = uint64(len(in) - i)
	}
	r, err := s.AddTokens(in)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Tokens(r)
	if len(got) != MaxTokens || got[0] != 1 || got[MaxTokens-1] != MaxTokens {
		t.Errorf("cut set: len %d, first %d, last %d", len(got), got[0], got[len(got)-1])
	}
}
