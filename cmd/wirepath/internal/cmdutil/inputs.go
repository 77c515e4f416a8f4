package cmdutil

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/internal/decompress"
)

// OutputFlags name the flags of a file a command writes, InputFlags those
// of files (or directories of them) it reads besides its arguments.
var (
	OutputFlags = []string{"output", "save-trace", "truth", "pcap-out"}
	InputFlags  = []string{"preload", "roles", "trace", "nat-table", "scenario", "pcap"}
)

// CheckOutputs refuses a command line whose output is one of its inputs
// (its arguments, the files named by InputFlags, the files in a directory
// named so): the same file after symbolic links, or under another name
// (a hard link), compared by device and inode. It is a usage error. Run
// before the command, it keeps the input from being overwritten (or
// emptied before it is read).
func CheckOutputs(cmd *cobra.Command, args []string) error {
	inputs := append([]string(nil), args...)
	for _, name := range InputFlags {
		inputs = append(inputs, flagValues(cmd.Flags(), name)...)
	}
	for _, name := range OutputFlags {
		for _, out := range flagValues(cmd.Flags(), name) {
			if out == "" || out == "-" {
				continue
			}
			ofi, err := os.Stat(out)
			if err != nil || ofi.IsDir() {
				continue // nothing there yet, or not a file: nothing to overwrite
			}
			if in, ok := sameAsAny(ofi, inputs); ok {
				return UsageErrorf("output %s is also an input (%s): refusing to overwrite it", out, in)
			}
		}
	}
	return nil
}

// flagValues returns the values of the flag name, if cmd has it and it
// was set.
func flagValues(fs *pflag.FlagSet, name string) []string {
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return nil
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

// sameAsAny returns the input (or the file in an input directory) that is
// the file fi describes.
func sameAsAny(fi os.FileInfo, inputs []string) (string, bool) {
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		ifi, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(ifi, fi) {
			return in, true
		}
		if !ifi.IsDir() {
			continue
		}
		entries, err := os.ReadDir(in)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(in, e.Name())
			if efi, err := os.Stat(p); err == nil && os.SameFile(efi, fi) {
				return p, true
			}
		}
	}
	return "", false
}

// CheckArgs is the root command's check of every command line (after it
// warns about renamed flags it used): no output
// is an input (CheckOutputs), and a command that does not read captures
// (it has no --split-interfaces) is not given one (CheckNotCaptures).
func CheckArgs(cmd *cobra.Command, args []string) error {
	WarnRenamed(cmd)
	if err := CheckOutputs(cmd, args); err != nil {
		return err
	}
	if cmd.Flags().Lookup("split-interfaces") != nil {
		return nil
	}
	return CheckNotCaptures(append(args, flagValues(cmd.Flags(), "trace")...))
}

// CheckNotCaptures refuses a packet capture (pcap or pcapng, plain or
// compressed, recognised by its first bytes) among paths given to a
// command that reads a trace or a result: it would otherwise report 4 KB
// of escaped binary as a bad line.
func CheckNotCaptures(paths []string) error {
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		if isCapture(p) {
			return UsageErrorf("%s is a packet capture: run `wirepath analyze` (or `reconcile`) on it first", p)
		}
	}
	return nil
}

// isCapture reports whether the file at path starts as a pcap or pcapng
// file does, after decompression.
func isCapture(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false // a pipe must not be read here
	}
	br, _, done, err := decompress.NewReader(f, decompress.Options{BufSize: 4096})
	if err != nil {
		return false
	}
	defer done()
	head, _ := br.Peek(4)
	if len(head) < 4 {
		return false
	}
	le := binary.LittleEndian.Uint32(head)
	be := binary.BigEndian.Uint32(head)
	for _, m := range []uint32{0xa1b2c3d4, 0xa1b23c4d, 0xa1b2cd34} {
		if le == m || be == m {
			return true
		}
	}
	return le == 0x0a0d0d0a
}

// DeprecatedAlias registers old, the former name of the flag now, on the
// same variable (define registers a flag of that name): hidden from the
// help, and using it writes a deprecation warning on stderr.
func DeprecatedAlias(fs *pflag.FlagSet, old, now string, define func(fs *pflag.FlagSet, name string)) {
	define(fs, old)
	fs.MarkHidden(old)
	fs.SetAnnotation(old, renamedTo, []string{now})
}

// renamedTo is the annotation of a deprecated alias: the flag's name now.
const renamedTo = "wirepath-renamed-to"

// WarnRenamed writes a warning on cmd's stderr for every deprecated alias
// (DeprecatedAlias) the command line used. (pflag's own deprecation
// notice would go to stdout, into the command's output.)
func WarnRenamed(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if now := f.Annotations[renamedTo]; len(now) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "wirepath: --%s is deprecated: use --%s\n", f.Name, now[0])
		}
	})
}

// FormatFlag registers --format text|json for a command whose report is
// text or JSON, setting *json, and hides the command's --json (already
// registered on json), which stays as an alias of --format json.
func FormatFlag(fs *pflag.FlagSet, json *bool) {
	fs.Var(jsonFormat{json}, "format", "output format: text, json")
	Enum(fs, "format", "text", "json")
	fs.MarkHidden("json")
}

// jsonFormat is the value of --format text|json.
type jsonFormat struct{ json *bool }

func (f jsonFormat) String() string {
	if f.json != nil && *f.json {
		return "json"
	}
	return "text"
}

func (f jsonFormat) Set(s string) error {
	switch s {
	case "text":
		*f.json = false
	case "json":
		*f.json = true
	default:
		return fmt.Errorf("want text or json, not %q", s)
	}
	return nil
}

func (f jsonFormat) Type() string { return "string" }

// enumValues is the annotation of a flag that takes one of a few values:
// the values, offered by shell completion.
const enumValues = "wirepath-enum"

// Enum notes that the flag name of fs takes one of values, for shell
// completion (CompleteEnums registers them).
func Enum(fs *pflag.FlagSet, name string, values ...string) {
	fs.SetAnnotation(name, enumValues, values)
}

// CompleteEnums registers, on cmd and every command under it, shell
// completion of the values of every flag noted with Enum.
func CompleteEnums(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		values := f.Annotations[enumValues]
		if len(values) == 0 {
			return
		}
		_ = cmd.RegisterFlagCompletionFunc(f.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		})
	})
	for _, c := range cmd.Commands() {
		CompleteEnums(c)
	}
}
