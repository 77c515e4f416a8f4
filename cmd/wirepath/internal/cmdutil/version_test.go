package cmdutil

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-26T18:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		version string
		bi      *debug.BuildInfo
		want    string
	}{
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "wirepath v1.4.0 (unknown revision,"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "wirepath dev (0123456789ab+dirty 2026-11-26T18:00:00Z,"},
		{"v2.0.0", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "wirepath v2.0.0 ("},
		{"dev", nil, "wirepath dev (unknown revision,"},
	} {
		if got := versionOf(tc.version, tc.bi); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q, %+v: %q, want %q...", tc.version, tc.bi, got, tc.want)
		}
	}
}
