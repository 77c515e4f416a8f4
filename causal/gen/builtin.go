package gen

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

//go:embed configs/*.yaml
var builtinFS embed.FS

// Builtin is one configuration shipped with wirepath.
type Builtin struct {
	Name        string
	Description string
	// Source is the configuration's YAML text.
	Source []byte
}

// Builtins returns the shipped configurations, sorted by name: the
// multi-tier system of Project 5 Figure 10 (normal and with the added delay
// at WS2), the four pathological cases of Figure 18, a message relay, and
// the microservice applications of TraceWeaver's evaluation (hotel, media,
// node).
func Builtins() []Builtin { return slices.Clone(builtins()) }

var builtins = sync.OnceValue(func() []Builtin {
	ents, err := fs.ReadDir(builtinFS, "configs")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	var out []Builtin
	for _, e := range ents {
		src, err := builtinFS.ReadFile(path.Join("configs", e.Name()))
		if err != nil {
			panic(err)
		}
		c, err := ParseConfig(bytes.NewReader(src), e.Name())
		if err != nil {
			panic(fmt.Sprintf("shipped config %s: %v", e.Name(), err))
		}
		out = append(out, Builtin{Name: strings.TrimSuffix(e.Name(), ".yaml"), Description: c.Description, Source: src})
	}
	slices.SortFunc(out, func(a, b Builtin) int { return strings.Compare(a.Name, b.Name) })
	return out
})

// LookupBuiltin returns the shipped configuration called name.
func LookupBuiltin(name string) (Builtin, bool) {
	for _, b := range builtins() {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// LoadConfig reads a configuration: the shipped one called arg when there
// is one and no file of that name exists, otherwise the file arg.
func LoadConfig(arg string) (*Config, error) {
	if _, err := os.Stat(arg); err != nil {
		if b, ok := LookupBuiltin(arg); ok {
			return ParseConfig(bytes.NewReader(b.Source), b.Name)
		}
	}
	f, err := os.Open(arg)
	if err != nil {
		return nil, fmt.Errorf("%w (not a file, and not a shipped config: see wirepath gen --list)", err)
	}
	defer f.Close()
	return ParseConfig(f, arg)
}
