package jsonl

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// walk returns the members of line as key -> raw value, or the lexer error.
func walk(line []byte) (keys []string, vals []Value, strs []string, err error) {
	var o Object
	if err := o.Reset(line); err != nil {
		return nil, nil, nil, err
	}
	for {
		k, v, ok := o.Next()
		if !ok {
			break
		}
		keys = append(keys, string(k))
		vals = append(vals, v)
		s := ""
		if v.Kind == String {
			b, err := v.Bytes()
			if err != nil {
				return nil, nil, nil, err
			}
			s = string(b)
		}
		strs = append(strs, s)
	}
	return keys, vals, strs, o.Err()
}

func TestObject(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		keys []string
	}{
		{`{}`, true, nil},
		{` { "a" : 1 , "b":"x\u00e9\n" } `, true, []string{"a", "b"}},
		{`{"a":{"b":[1,2,{"c":null}]},"d":true,"e":false}`, true, []string{"a", "d", "e"}},
		{`{"k\"ey":-0.5e+3}`, true, []string{`k"ey`}},
		{`{"a":1,}`, false, nil},
		{`{"a" 1}`, false, nil},
		{`{"a":01}`, false, nil},
		{`{"a":1} x`, false, nil},
		{`{"a":"\x"}`, false, nil},
		{"{\"a\":\"\t\"}", false, nil},
		{`[1]`, false, nil},
		{`{"a":tru}`, false, nil},
		{`{"a":1`, false, nil},
	}
	for _, c := range cases {
		keys, _, _, err := walk([]byte(c.in))
		if (err == nil) != c.ok {
			t.Errorf("%s: err=%v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if c.ok && len(keys) != len(c.keys) {
			t.Errorf("%s: keys %q, want %q", c.in, keys, c.keys)
		}
		var m map[string]any
		if (json.Unmarshal([]byte(c.in), &m) == nil) != c.ok {
			t.Errorf("%s: test case disagrees with encoding/json", c.in)
		}
	}
}

func TestInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil}, {"-0", 0, nil}, {"9223372036854775807", 1<<63 - 1, nil},
		{"-9223372036854775808", -1 << 63, nil}, {"9223372036854775808", 0, ErrRange},
		{"-9223372036854775809", 0, ErrRange}, {"1.5", 0, ErrNotInt}, {"1e3", 0, ErrNotInt},
		{"99999999999999999999999", 0, ErrRange},
	} {
		_, vals, _, err := walk([]byte(`{"n":` + c.in + `}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := vals[0].Int()
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("%s: %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestUint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  error
	}{
		{"0", 0, nil}, {"-0", 0, ErrRange}, {"18446744073709551615", 1<<64 - 1, nil},
		{"18446744073709551616", 0, ErrRange}, {"-1", 0, ErrRange}, {"1.5", 0, ErrNotInt},
		{"-1.5", 0, ErrNotInt}, {"1e3", 0, ErrNotInt},
	} {
		_, vals, _, err := walk([]byte(`{"n":` + c.in + `}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := vals[0].Uint()
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("%s: %d, %v; want %d, %v", c.in, got, err, c.want, c.err)
		}
	}
}

// elems returns the elements of array value v: their raw text and, for
// strings, the decoded string.
func elems(v Value) (raw, strs []string, err error) {
	var e Elems
	if err := e.Reset(v); err != nil {
		return nil, nil, err
	}
	for {
		x, ok := e.Next()
		if !ok {
			break
		}
		raw = append(raw, string(x.Raw()))
		s := ""
		if x.Kind == String {
			b, err := x.Bytes()
			if err != nil {
				return nil, nil, err
			}
			s = string(b)
		}
		strs = append(strs, s)
	}
	return raw, strs, e.Err()
}

func TestElems(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`[]`, nil},
		{` [ 1 , "a\u0041" ,{"b":[2]}, [] ,null] `, []string{"1", `"a\u0041"`, `{"b":[2]}`, "[]", "null"}},
		{`["x"]`, []string{`"x"`}},
	} {
		_, vals, _, err := walk([]byte(`{"a":` + c.in + `}`))
		if err != nil {
			t.Fatal(c.in, err)
		}
		raw, strs, err := elems(vals[0])
		if err != nil || len(raw) != len(c.want) {
			t.Fatalf("%s: %q, %v; want %q", c.in, raw, err, c.want)
		}
		for i := range raw {
			if raw[i] != c.want[i] {
				t.Errorf("%s: element %d is %s, want %s", c.in, i, raw[i], c.want[i])
			}
		}
		if c.in == `["x"]` && strs[0] != "x" {
			t.Errorf("string element decoded as %q", strs[0])
		}
	}
	_, vals, _, _ := walk([]byte(`{"a":1}`))
	var e Elems
	if err := e.Reset(vals[0]); !errors.Is(err, ErrType) {
		t.Errorf("Reset of a number: %v, want ErrType", err)
	}
	if _, ok := e.Next(); ok {
		t.Error("Next after a failed Reset returned an element")
	}
}

func TestNoAllocs(t *testing.T) {
	line := []byte(`{"send_ts":1700000000000000000,"src":"10.0.0.1:80","kind":"CALL","x":{"y":[1,2]}}`)
	var o Object
	allocs := testing.AllocsPerRun(100, func() {
		o.Reset(line)
		for {
			_, v, ok := o.Next()
			if !ok {
				break
			}
			if v.Kind == String {
				v.Bytes()
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per object, want 0", allocs)
	}
}

// FuzzObject checks the lexer against encoding/json: it accepts a line iff
// encoding/json finds it a valid object, and decodes strings and integers
// to the same values.
func FuzzObject(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 64, "preload/testdata/*.jsonl", "trace/testdata/small.jsonl") {
		f.Add(l)
	}
	for _, s := range []string{
		`{"a":1}`,                           // plain member
		`{"a":"\ud83d\ude00\ud800x\u0041"}`, // surrogate pair, lone surrogate, escape
		"{\"a\":\"\xff\xfe\"}",              // invalid UTF-8 becomes U+FFFD
		`{"a":[{"b":[]}],"c":null}`,         // nested values skipped
		`{"a":-12.5e-3,"b":true}`,           // number grammar
		`{"a":1,"a":2}`,                     // duplicate keys
		`{"a" : "b" } `,                     // white space
		`{"a":"`,                            // truncated
		`{"a":["x\u0041",1,["y"]]}`,         // array elements, escaped
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		keys, vals, strs, err := walk(line)
		var m map[string]json.RawMessage
		jerr := json.Unmarshal(line, &m)
		if jerr == nil && m == nil {
			jerr = errors.New("null")
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: lexer err %v, encoding/json err %v", line, err, jerr)
		}
		if err != nil {
			return
		}
		for i, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("%q: key %q not seen by encoding/json", line, k)
			}
			v := vals[i]
			switch v.Kind {
			case String:
				var s string
				if err := json.Unmarshal(v.Raw(), &s); err != nil || s != strs[i] {
					t.Fatalf("%q: string %q, encoding/json %q (%v)", line, strs[i], s, err)
				}
			case Number:
				n, err := v.Int()
				var jn int64
				jerr := json.Unmarshal(v.Raw(), &jn)
				if (err == nil) != (jerr == nil) || n != jn {
					t.Fatalf("%q: int %d (%v), encoding/json %d (%v)", line, n, err, jn, jerr)
				}
				if err == nil && strconv.FormatInt(n, 10) != string(v.Raw()) && string(v.Raw()) != "-0" {
					t.Fatalf("%q: int %d does not print as %s", line, n, v.Raw())
				}
				u, err := v.Uint()
				var ju uint64
				jerr = json.Unmarshal(v.Raw(), &ju)
				if (err == nil) != (jerr == nil) || u != ju {
					t.Fatalf("%q: uint %d (%v), encoding/json %d (%v)", line, u, err, ju, jerr)
				}
			case Array:
				checkElems(t, line, v)
			}
		}
	})
}

// FuzzAppendString checks that AppendString writes what encoding/json reads
// back as the same string (with invalid UTF-8 replaced, as json.Marshal does).
func FuzzAppendString(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 32, "cmd/wirepath/testdata/traces/rpc-small.tsv") {
		f.Add(string(l))
	}
	for _, s := range []string{"plain", "q\"b\\", "\x00\x1f\t\n", "\xff", "\u2028é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, out, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q -> %s reads back as %q, json.Marshal's as %q", s, out, back, wantBack)
		}
		keys, _, strs, err := walk(append(append([]byte(`{"k":`), out...), '}'))
		if err != nil || len(keys) != 1 || strs[0] != back {
			t.Fatalf("%s: lexer %q, %v", out, strs, err)
		}
	})
}

// checkElems compares Elems over array v with encoding/json's reading.
func checkElems(t *testing.T, line []byte, v Value) {
	t.Helper()
	raw, strs, err := elems(v)
	if err != nil {
		t.Fatalf("%q: elements of a valid array: %v", line, err)
	}
	var want []json.RawMessage
	if err := json.Unmarshal(v.Raw(), &want); err != nil || len(want) != len(raw) {
		t.Fatalf("%q: %d elements, encoding/json %d (%v)", line, len(raw), len(want), err)
	}
	for i := range raw {
		var s string
		if json.Unmarshal(want[i], &s) == nil && s != strs[i] {
			t.Fatalf("%q: element %d is %q, encoding/json %q", line, i, strs[i], s)
		}
	}
}
