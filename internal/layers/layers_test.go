package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/wirepath/wirepath"

// graph maps each package of the module (by its path inside the module,
// "." for the root) to the module's packages its non-test files import.
type graph map[string][]string

// readGraph parses the import declarations of every non-test Go file
// under root, whatever its build constraints (a superset of any one
// build's imports).
func readGraph(t *testing.T, root string) graph {
	t.Helper()
	g := graph{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		if _, ok := g[pkg]; !ok {
			g[pkg] = nil
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if imp == module || strings.HasPrefix(imp, module+"/") {
				dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
				if !slices.Contains(g[pkg], dep) {
					g[pkg] = append(g[pkg], dep)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, deps := range g {
		sort.Strings(deps)
	}
	return g
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// underAny reports whether pkg is under one of dirs.
func underAny(pkg string, dirs ...string) bool {
	for _, d := range dirs {
		if under(pkg, d) {
			return true
		}
	}
	return false
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// engines returns the engine packages: those the registry causal/engines
// imports from causal/, except the contract itself.
func engines(g graph) []string {
	var out []string
	for _, d := range g["causal/engines"] {
		if under(d, "causal") && d != "causal" {
			out = append(out, d)
		}
	}
	return out
}

// isCommand reports whether pkg is (inside) a command's package under
// cmd/wirepath/internal, not one of those the commands share.
func isCommand(pkg string) bool {
	if !under(pkg, "cmd/wirepath/internal") || pkg == "cmd/wirepath/internal" {
		return false
	}
	name := strings.SplitN(strings.TrimPrefix(pkg, "cmd/wirepath/internal/"), "/", 2)[0]
	return !slices.Contains([]string{"cmdutil", "captureflags", "enginecmd", "cmdtest"}, name)
}

// rule is one layering rule, named by what it says; check reports whether
// the import edge pkg -> dep keeps it.
type rule struct {
	name  string
	check func(pkg, dep string) bool // true when the edge is allowed
}

func rules(g graph) []rule {
	eng := engines(g)
	stages := []string{"pcapio", "nat", "flows", "proto", "preload", "reconcile", "pipeline"}
	back := []string{"causal", "report", "whatif", "cmd", "testbed", "tools", "scripts"}
	return []rule{
		{"trace is the ground floor: it imports nothing of wirepath but internal/", func(pkg, dep string) bool {
			return !under(pkg, "trace") || under(dep, "internal") || under(dep, "trace")
		}},
		{"clock imports nothing of wirepath: clocks are numbers", func(pkg, dep string) bool {
			return !under(pkg, "clock") || under(dep, "clock")
		}},
		{"internal/ knows no stage, engine, renderer or command", func(pkg, dep string) bool {
			return !under(pkg, "internal") || !underAny(dep, append(append(slices.Clone(stages), "report", "whatif", "cmd", "testbed", "tools", "scripts"), eng...)...)
		}},
		{"proto/ decodes bytes: it imports only proto/ and internal/", func(pkg, dep string) bool {
			return !under(pkg, "proto") || underAny(dep, "proto", "internal")
		}},
		{"pcapio knows no later stage: it imports only clock and internal/", func(pkg, dep string) bool {
			return !under(pkg, "pcapio") || underAny(dep, "pcapio", "clock", "internal")
		}},
		{"nat reads packets, not messages: it imports only clock, pcapio, trace and internal/", func(pkg, dep string) bool {
			return !under(pkg, "nat") || underAny(dep, "nat", "clock", "pcapio", "trace", "internal")
		}},
		{"flows knows packets and decoders, not NAT, syscall traces or reconciling", func(pkg, dep string) bool {
			return !under(pkg, "flows") || underAny(dep, "flows", "pcapio", "proto", "trace", "internal")
		}},
		{"preload knows syscall traces only: it imports trace and internal/", func(pkg, dep string) bool {
			return !under(pkg, "preload") || underAny(dep, "preload", "trace", "internal")
		}},
		{"reconcile reads messages and syscall traces, not packets or NAT", func(pkg, dep string) bool {
			return !under(pkg, "reconcile") || underAny(dep, "reconcile", "clock", "flows", "preload", "trace", "internal")
		}},
		{"no stage of the front half imports the back half (engines, results, rendering, commands)", func(pkg, dep string) bool {
			return !underAny(pkg, stages...) || !underAny(dep, back...)
		}},
		{"causal, the contract, imports only trace and internal/", func(pkg, dep string) bool {
			return pkg != "causal" || underAny(dep, "trace", "internal")
		}},
		{"an engine imports the contract, trace and internal/: no other engine, no registry, no generator", func(pkg, dep string) bool {
			return !underAny(pkg, eng...) || dep == "causal" || underAny(dep, "trace", "internal") || under(dep, pkg)
		}},
		{"causal/resultjson reads the contract: it imports only causal", func(pkg, dep string) bool {
			return pkg != "causal/resultjson" || dep == "causal"
		}},
		{"whatif models patterns and the trace's requests: it imports only causal and trace", func(pkg, dep string) bool {
			return !under(pkg, "whatif") || dep == "causal" || under(dep, "trace")
		}},
		{"report renders results: it imports no engine, stage or command", func(pkg, dep string) bool {
			return !under(pkg, "report") || underAny(dep, "causal/resultjson", "trace", "whatif", "internal") || dep == "causal"
		}},
		{"nothing but cmd/ imports a command package", func(pkg, dep string) bool {
			return !under(dep, "cmd") || under(pkg, "cmd")
		}},
		{"a command imports no other command (what they share is in cmdutil, captureflags, enginecmd)", func(pkg, dep string) bool {
			return !isCommand(dep) || pkg == "cmd/wirepath/internal/root" || under(dep, pkg) || under(pkg, dep)
		}},
		{"the product imports no tool, script or testbed program", func(pkg, dep string) bool {
			return !underAny(dep, "tools", "scripts", "testbed") || underAny(pkg, "tools", "scripts", "testbed")
		}},
	}
}

// TestLayers checks every import edge of the module against the rules.
func TestLayers(t *testing.T) {
	g := readGraph(t, moduleRoot(t))
	for _, must := range []string{"trace", "clock", "causal", "causal/engines", "report", "pipeline"} {
		if _, ok := g[must]; !ok {
			t.Fatalf("package %s not found: is this the module root?", must)
		}
	}
	if len(engines(g)) < 3 {
		t.Fatalf("engines %v: causal/engines should import every engine", engines(g))
	}
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, r := range rules(g) {
		for _, p := range pkgs {
			for _, d := range g[p] {
				if !r.check(p, d) {
					t.Errorf("%s imports %s: %s", p, d, r.name)
				}
			}
		}
	}
}

// TestRulesCatch makes sure each rule can fail: every edge listed here
// breaks at least the rule named.
func TestRulesCatch(t *testing.T) {
	g := graph{"causal/engines": {"causal", "causal/linking", "causal/nesting"}}
	bad := []struct{ pkg, dep, rule string }{
		{"trace", "pcapio", "trace is the ground floor"},
		{"clock", "trace", "clock imports nothing"},
		{"internal/ring", "flows", "internal/ knows no stage"},
		{"proto/tls", "trace", "proto/ decodes bytes"},
		{"pcapio", "trace", "pcapio knows no later stage"},
		{"flows", "reconcile", "flows knows packets"},
		{"flows", "nat", "flows knows packets"},
		{"reconcile", "pcapio", "reconcile reads messages"},
		{"pipeline", "causal", "no stage of the front half"},
		{"causal", "causal/linking", "causal, the contract"},
		{"causal/linking", "causal/nesting", "an engine imports"},
		{"causal/nesting", "causal/gen", "an engine imports"},
		{"report", "causal/nesting", "report renders results"},
		{"report", "cmd/wirepath/internal/cmdutil", "report renders results"},
		{"whatif", "report", "whatif models patterns"},
		{"cmd/wirepath/internal/whatif", "cmd/wirepath/internal/report", "a command imports no other command"},
		{"causal/score", "cmd/wirepath/internal/cmdutil", "nothing but cmd/"},
		{"pcapio", "tools/benchgen", "the product imports no tool"},
	}
	rs := rules(g)
	for _, b := range bad {
		caught := false
		for _, r := range rs {
			if !r.check(b.pkg, b.dep) && strings.HasPrefix(r.name, b.rule) {
				caught = true
			}
		}
		if !caught {
			t.Errorf("%s -> %s is not caught by the rule %q", b.pkg, b.dep, b.rule)
		}
	}
	// And the shared command packages are not commands.
	for _, p := range []string{"cmd/wirepath/internal/cmdutil", "cmd/wirepath/internal/enginecmd", path.Join("cmd/wirepath/internal", "captureflags")} {
		if isCommand(p) {
			t.Errorf("%s counted as a command", p)
		}
	}
}
