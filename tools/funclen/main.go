// Command funclen reports the functions longer than a limit, counting the
// lines from the func keyword to the closing brace, as gocyclo reports the
// complex ones (gocyclo does not measure length). Test files (_test.go),
// generated files (a "Code generated ... DO NOT EDIT." line before the
// package clause) and the testdata, vendor and hidden directories are
// skipped. It is not part of wirepath: `make vet` runs it to enforce the
// function-size rule of docs/architecture.md.
//
// Usage:
//
//	funclen [-over N] [-test] [DIR|FILE ...]
//
// It prints "LINES PACKAGE FUNCTION FILE:LINE:COL" for each function over N
// lines (default 150), longest first, and exits 1 when it printed any.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Func is one function and its length in lines.
type Func struct {
	Lines int
	Pkg   string
	Name  string
	Pos   token.Position
}

// String formats f as gocyclo formats its lines: "LINES PACKAGE FUNCTION FILE:LINE:COL".
func (f Func) String() string {
	return fmt.Sprintf("%d %s %s %s", f.Lines, f.Pkg, f.Name, f.Pos)
}

func main() {
	over := flag.Int("over", 150, "report functions longer than `N` lines")
	tests := flag.Bool("test", false, "measure _test.go files too")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: funclen [-over N] [-test] [DIR|FILE ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	paths := flag.Args()
	if len(paths) == 0 {
		paths = []string{"."}
	}
	funcs, err := Measure(paths, *tests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	n := 0
	for _, f := range funcs {
		if f.Lines > *over {
			fmt.Println(f)
			n++
		}
	}
	if n > 0 {
		os.Exit(1)
	}
}

// Measure returns every function declared in the Go files under paths,
// longest first (then by position).
func Measure(paths []string, tests bool) ([]Func, error) {
	var out []Func
	fset := token.NewFileSet()
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || !tests && strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fs, err := measureFile(fset, path)
			out = append(out, fs...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b Func) int {
		if a.Lines != b.Lines {
			return b.Lines - a.Lines
		}
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		return a.Pos.Line - b.Pos.Line
	})
	return out, nil
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// generated matches the line the Go convention puts in generated files
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

// measureFile returns the functions of one file, none if it is generated.
func measureFile(fset *token.FileSet, path string) ([]Func, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if generated.MatchString(c.Text) {
				return nil, nil
			}
		}
	}
	var out []Func
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := fset.Position(fd.Pos())
		end := fset.Position(fd.End())
		out = append(out, Func{Lines: end.Line - start.Line + 1, Pkg: f.Name.Name, Name: funcName(fd), Pos: start})
	}
	return out, nil
}

// funcName names a function as gocyclo does: "(*T).M", "T.M" or "F".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return "(" + recvString(fd.Recv.List[0].Type) + ")." + fd.Name.Name
}

func recvString(x ast.Expr) string {
	switch t := x.(type) {
	case *ast.StarExpr:
		return "*" + recvString(t.X)
	case *ast.IndexExpr:
		return recvString(t.X)
	case *ast.IndexListExpr:
		return recvString(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}
