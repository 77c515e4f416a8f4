package main

import "testing"

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"", 0, true},          // none
		{"0", 0, true},         // none
		{"10mbit", 10e6, true}, // tc's spelling
		{"100Mbit/s", 100e6, true},
		{"1gbit", 1e9, true},
		{"500kbit", 500e3, true},
		{"10mbps", 10e6, true},
		{"2500", 2500, true}, // bits per second
		{"fast", 0, false},
		{"-5mbit", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
	} {
		got, err := parseRate(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseRate(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestDelayOn: the delay applies in the odd windows of the wall clock, so
// that tbwhatif can tell from a request's times which setting it met.
func TestDelayOn(t *testing.T) {
	const w = int64(1e9)
	for _, c := range []struct {
		t  int64
		on bool
	}{
		{0, false}, {w - 1, false}, {w, true}, {2*w - 1, true}, {2 * w, false}, {1795721569777136843, true}, {1795721568777136843, false},
	} {
		if got := delayOn(c.t, w); got != c.on {
			t.Errorf("delayOn(%d) = %v, want %v", c.t, got, c.on)
		}
	}
}

// TestSetting: with -toggle both the delay and the rate limit are off in
// the even windows (a toggled bandwidth run compares the link with and
// without its limit), and without -toggle both always apply.
func TestSetting(t *testing.T) {
	const w = int64(1e9)
	for _, c := range []struct {
		name       string
		delay      int64
		rate       float64
		toggle, at int64
		wantD      int64
		wantR      float64
	}{
		{"no toggle", 5e6, 10e6, 0, 0, 5e6, 10e6},
		{"toggle, even window", 5e6, 10e6, w, 2*w + 1, 0, 0},
		{"toggle, odd window", 5e6, 10e6, w, 3*w + 1, 5e6, 10e6},
		{"rate only, even window", 0, 10e6, w, 4 * w, 0, 0},
		{"rate only, odd window", 0, 10e6, w, 5 * w, 0, 10e6},
	} {
		d := &direction{delay: c.delay, rate: c.rate, toggle: c.toggle}
		if gd, gr := d.setting(c.at); gd != c.wantD || gr != c.wantR {
			t.Errorf("%s: setting = %d, %v; want %d, %v", c.name, gd, gr, c.wantD, c.wantR)
		}
	}
}
