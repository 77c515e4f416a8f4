package cmdutil

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a root with one subcommand whose RunE returns runErr.
func tree(runErr error) *cobra.Command {
	root := &cobra.Command{Use: "w", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(&cobra.Command{
		Use:  "sub",
		Args: cobra.ExactArgs(1),
		RunE: func(*cobra.Command, []string) error { return runErr },
	})
	root.AddCommand(&cobra.Command{
		Use:     "hooked",
		PreRunE: func(*cobra.Command, []string) error { return runErr },
		RunE:    func(*cobra.Command, []string) error { return nil },
	})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return root
}

func TestExecuteTypesErrors(t *testing.T) {
	plain := errors.New("unknown flag: looks like cobra's but is the command's own")
	for _, tc := range []struct {
		name   string
		runErr error
		args   []string
		want   int
	}{
		{"success", nil, []string{"sub", "x"}, ExitOK},
		{"unknown command", nil, []string{"frob"}, ExitUsage},
		{"unknown flag", nil, []string{"sub", "x", "--frob"}, ExitUsage},
		{"bad flag value", nil, []string{"sub", "x", "--help=maybe"}, ExitUsage},
		{"too many arguments", nil, []string{"sub", "x", "y"}, ExitUsage},
		{"too few arguments", nil, []string{"sub"}, ExitUsage},
		{"own error with cobra's words", plain, []string{"sub", "x"}, ExitError},
		{"own usage error", UsageErrorf("--n must be positive"), []string{"sub", "x"}, ExitUsage},
		{"own partial error", &PartialError{Skipped: 2, What: "x"}, []string{"sub", "x"}, ExitPartial},
		{"hook error", plain, []string{"hooked"}, ExitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(tc.runErr)
			root.SetArgs(tc.args)
			err := Execute(root)
			if got := ExitCode(err); got != tc.want {
				t.Errorf("exit code %d, want %d (err %v)", got, tc.want, err)
			}
			if tc.runErr != nil && tc.want != ExitUsage && err != tc.runErr {
				t.Errorf("err %#v, want the command's own error passed on unwrapped", err)
			}
		})
	}
}

func TestExecuteTwice(t *testing.T) {
	root := tree(errors.New("own"))
	for i := 0; i < 2; i++ {
		root.SetArgs([]string{"sub", "x"})
		err := Execute(root)
		var own *ownError
		if ExitCode(err) != ExitError || errors.As(err, &own) {
			t.Errorf("run %d: err %#v", i, err)
		}
	}
}

func TestPrintErrorDropsUsagePrefix(t *testing.T) {
	root := tree(nil)
	root.SetArgs([]string{"sub"})
	var b strings.Builder
	PrintError(&b, Execute(root))
	if want := "wirepath: accepts 1 arg(s), received 0\n"; b.String() != want {
		t.Errorf("printed %q, want %q", b.String(), want)
	}
}
