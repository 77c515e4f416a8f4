package resultjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// indentCases are compact JSON documents with what the layout has to get
// right: empty containers, nesting, escaped quotes and backslashes in
// strings, punctuation inside strings, numbers and literals, and the
// newline json.Encoder ends a document with.
var indentCases = []string{
	`{}`,
	`[]`,
	`{"a":[],"b":{},"c":[{}],"d":[[],[1,2]]}` + "\n",
	`{"s":"a\"b\\","t":"\\\\\"","u":"{[,:]}","v":"\u00e9<>&"}`,
	`[1,-2.5e-7,true,false,null,"x"]`,
	`"just a string"`,
	`12345`,
	`{"deep":` + strings.Repeat(`[`, 40) + `1` + strings.Repeat(`]`, 40) + `}` + "\n",
	`{"k\"ey":{"x:y":",","":""}}`,
}

func TestWriteIndentedMatchesJSONIndent(t *testing.T) {
	for _, c := range indentCases {
		t.Run(c, func(t *testing.T) { checkIndent(t, []byte(c)) })
	}
}

func TestEncodeMatchesEncoder(t *testing.T) {
	v := map[string]any{"a": []any{}, "b": map[string]any{"c": "<&>", "d": []int{1, 2}}, "e": nil}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := encode(&got, v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("encode:\n%s\nEncoder:\n%s", got.Bytes(), want.Bytes())
	}
}

// checkIndent holds writeIndented to json.Indent on src (compact JSON).
func checkIndent(t *testing.T, src []byte) {
	t.Helper()
	var want, got bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("json.Indent(%q): %v", src, err)
	}
	if err := writeIndented(&got, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("writeIndented(%q):\n%q\njson.Indent:\n%q", src, got.Bytes(), want.Bytes())
	}
}

func FuzzWriteIndented(f *testing.F) {
	for _, c := range indentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatal(err)
		}
		checkIndent(t, compact.Bytes())
	})
}
