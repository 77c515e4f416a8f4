// Command genman writes wirepath's man pages, one per command, from the
// cobra command tree (github.com/spf13/cobra/doc): `make man` runs it.
//
//	go run ./cmd/wirepath/internal/root/genman -o bin/man
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/root"
)

func main() {
	dir := flag.String("o", "man", "directory to write the man pages to")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}

// run writes the pages of every command into dir (section 1).
func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := root.NewCmdRoot(cmdutil.System())
	cmd.DisableAutoGenTag = true   // the pages do not change with the day they were made
	cmd.InitDefaultCompletionCmd() // cobra adds it only when it runs
	header := &doc.GenManHeader{Title: "WIREPATH", Section: "1", Source: "wirepath " + cmdutil.Version, Manual: "wirepath manual"}
	return doc.GenManTree(cmd, header, dir)
}
