// Command tbdelay is the testbed's delaying forwarder (docs/testbed.md,
// docs/whatif.md): the kernels the testbed runs on have no netem qdisc,
// so to add round-trip time and a slower link between two hosts the
// testbed puts this program in a namespace of its own between them. It
// copies every Ethernet frame arriving on one interface out of the other
// (AF_PACKET, both ways: a transparent wire), each direction holding its
// frames for -delay and, with -rate, serialising them as a link of that
// many bits per second would (a frame leaves when the one before it has
// been sent and its own bits have, so queues form as on a real link, not
// as in a token bucket that lets a burst through). With -match only IPv4
// frames between the two addresses given are held; the others pass at
// once, so one link of a host with several can be slowed. The testbed
// runs it with zero delay in the base run too, so that its own cost is in
// both runs. With -toggle it delays and limits the rate only in alternate
// windows of the wall clock, so that one run holds both settings under the
// same load of the machine (its requests are told apart by their times).
//
// On SIGTERM or SIGINT it writes what it did as one JSON line to -log (or
// stderr): frames per direction, frames held, dropped, and the delay it
// actually added beyond what was asked (timer lateness).
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	maxFrame = 65536
	// maxQueued bounds the frames held per direction; beyond it frames are
	// dropped (a link's queue overflowing) and counted.
	maxQueued = 20000
	// spin is how long before a frame's time the writer stops sleeping and
	// polls the clock.
	spin = 60 * time.Microsecond
)

// frame is one frame on its way; buf is its bytes in a pooled buffer
// (*pb, kept to return it).
type frame struct {
	pb      *[]byte
	buf     []byte
	arrived int64 // monotonic ns when it was read
	release int64 // monotonic ns when it may leave
}

// dirStats are one direction's counters. Transit is from a frame's read
// to the end of its write: the delay the forwarder added, its own cost
// included, so that the change a run made is its mean transit minus the
// base run's.
type dirStats struct {
	Frames    int64   `json:"frames"`
	Held      int64   `json:"held"`
	Dropped   int64   `json:"dropped"`
	Errors    int64   `json:"errors"`
	TransitNS float64 `json:"mean_transit_ns"`
	LateNS    float64 `json:"mean_late_ns"` // mean of write time minus release time, held frames
	MaxLate   int64   `json:"max_late_ns"`
	Late1ms   int64   `json:"late_over_1ms"`
	lateSum   int64
	transit   int64
}

// sent counts a frame written at t.
func (d *direction) sent(f *frame, t int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.st.Errors++
	}
	d.st.transit += t - f.arrived
	if f.release > f.arrived {
		late := t - f.release
		d.st.lateSum += late
		d.st.MaxLate = max(d.st.MaxLate, late)
		if late > 1e6 {
			d.st.Late1ms++
		}
	}
}

// direction forwards frames from one interface to another: frames that
// match and must wait go through the held queue (in order: one delay and
// one link, so their release times never decrease); the others the reader
// writes at once (so that with no delay the forwarder costs two system
// calls, not a hand-over between threads).
type direction struct {
	name    string
	in, out int
	delay   int64
	rate    float64 // bits per second, 0 = unlimited
	match   [2]netip.Addr
	hasM    bool
	// toggle, when positive, applies the delay and the rate only in
	// alternate windows of that many ns of the wall clock: a frame read at
	// Unix time t is held when t/toggle is odd.
	toggle int64

	held    chan frame
	busyEnd int64 // when the serialised link finishes its last frame
	pool    sync.Pool

	mu sync.Mutex
	st dirStats
}

var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// matches reports whether an Ethernet frame is IPv4 between the two
// addresses (either way).
func (d *direction) matches(b []byte) bool {
	if !d.hasM {
		return true
	}
	off := 14
	et := binary.BigEndian.Uint16(b[12:14])
	if et == 0x8100 && len(b) >= 18 {
		et, off = binary.BigEndian.Uint16(b[16:18]), 18
	}
	if et != 0x0800 || len(b) < off+20 {
		return false
	}
	src := netip.AddrFrom4([4]byte(b[off+12 : off+16]))
	dst := netip.AddrFrom4([4]byte(b[off+16 : off+20]))
	return src == d.match[0] && dst == d.match[1] || src == d.match[1] && dst == d.match[0]
}

// read copies frames from the input interface into the queues.
func (d *direction) read() {
	for {
		pb := d.pool.Get().(*[]byte)
		buf := (*pb)[:maxFrame]
		n, err := unix.Read(d.in, buf)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			log.Fatalf("tbdelay: %s: read: %v", d.name, err)
		}
		if n < 14 {
			d.pool.Put(pb)
			continue
		}
		t := now()
		f := frame{pb: pb, buf: buf[:n], arrived: t, release: t}
		d.mu.Lock()
		d.st.Frames++
		delay, rate := d.setting(time.Now().UnixNano())
		if d.matches(f.buf) && (delay > 0 || rate > 0) {
			d.st.Held++
			start := t
			if rate > 0 {
				start = max(t, d.busyEnd) + int64(math.Round(float64(n*8)/rate*1e9))
				d.busyEnd = start
			}
			f.release = start + delay
		}
		d.mu.Unlock()
		if f.release == f.arrived {
			_, err := unix.Write(d.out, f.buf)
			d.sent(&f, now(), err)
			d.pool.Put(pb)
			continue
		}
		select {
		case d.held <- f:
		default:
			d.mu.Lock()
			d.st.Dropped++
			d.mu.Unlock()
			d.pool.Put(pb)
		}
	}
}

// setting is the delay and rate the direction applies to a frame read at
// Unix time t (ns): both of them in the windows where the change is on
// (always without -toggle), neither in the others, so that a toggled run
// compares the link with and without its delay or its rate limit.
func (d *direction) setting(t int64) (delay int64, rate float64) {
	if d.toggle > 0 && !delayOn(t, d.toggle) {
		return 0, 0
	}
	return d.delay, d.rate
}

// delayOn reports whether the delay applies at Unix time t (ns) with
// windows of toggle ns: in the odd windows.
func delayOn(t, toggle int64) bool { return (t/toggle)%2 == 1 }

// writeHeld sends each held frame at its release time, sleeping in the
// kernel (a Go timer shorter than a millisecond wakes a millisecond late)
// on a thread of its own with a timer slack of a microsecond, and polling
// the clock for the last few microseconds.
func (d *direction) writeHeld() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	for f := range d.held {
		if wait := f.release - now(); wait > int64(spin) {
			ts := unix.NsecToTimespec(wait - int64(spin))
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		for now() < f.release {
		}
		_, err := unix.Write(d.out, f.buf)
		d.sent(&f, now(), err)
		d.pool.Put(f.pb)
	}
}

// open returns an AF_PACKET socket bound to interface name, in
// promiscuous mode, that does not see the frames it sends.
func open(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return -1, err
	}
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return -1, fmt.Errorf("bind %s: %w", name, err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return -1, fmt.Errorf("promiscuous %s: %w", name, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return -1, fmt.Errorf("ignore outgoing %s: %w", name, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20)
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// parseRate parses "10mbit", "100Mbit/s", "1gbit", "500kbit" or a plain
// number of bits per second.
func parseRate(s string) (float64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	t := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(s, "/s"), "ps"))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "it"), "b")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, t[:len(t)-1]
	}
	var v float64
	if _, err := fmt.Sscan(t, &v); err != nil || !(v > 0) || math.IsInf(v, 1) {
		return 0, fmt.Errorf("bad rate %q", s)
	}
	return v * mult, nil
}

func main() {
	a := flag.String("a", "", "first interface (the host's side)")
	b := flag.String("b", "", "second interface (the network's side)")
	delayAB := flag.Duration("delay-ab", 0, "delay added to frames from -a to -b")
	delayBA := flag.Duration("delay-ba", 0, "delay added to frames from -b to -a")
	rateAB := flag.String("rate-ab", "", "serialisation rate from -a to -b, e.g. 10mbit (default: none)")
	rateBA := flag.String("rate-ba", "", "serialisation rate from -b to -a")
	match := flag.String("match", "", "ADDR,ADDR: hold only IPv4 frames between these two addresses")
	logPath := flag.String("log", "", "write the counters here on exit (default stderr)")
	toggle := flag.Duration("toggle", 0, "apply the delays and rates only in alternate windows of this length of the wall clock (Unix time / toggle odd), so one run has both settings")
	flag.Parse()
	if *a == "" || *b == "" {
		log.Fatal("tbdelay: -a and -b are required")
	}
	fa, err := open(*a)
	if err != nil {
		log.Fatalf("tbdelay: %v", err)
	}
	fb, err := open(*b)
	if err != nil {
		log.Fatalf("tbdelay: %v", err)
	}
	var m [2]netip.Addr
	hasM := false
	if *match != "" {
		x, y, ok := strings.Cut(*match, ",")
		ax, err1 := netip.ParseAddr(x)
		ay, err2 := netip.ParseAddr(y)
		if !ok || err1 != nil || err2 != nil || !ax.Is4() || !ay.Is4() {
			log.Fatalf("tbdelay: bad -match %q: want two IPv4 addresses", *match)
		}
		m, hasM = [2]netip.Addr{ax, ay}, true
	}
	// Each direction's reader spends its life blocked in read(2), holding
	// a P in the syscall state, and the writer it readies is queued on
	// that P: with GOMAXPROCS 2 (the build machine's cores) no idle P
	// was left to run it, and it waited for sysmon to retake one, up to
	// 10 ms (at 10 Mbit/s both ways the held frames left 0.49 ms late on
	// average, 20 ms at worst). Spare Ps let a spinning thread steal it.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 8))
	var dirs [2]*direction
	for i, c := range []struct {
		name    string
		in, out int
		delay   time.Duration
		rate    string
	}{{*a + ">" + *b, fa, fb, *delayAB, *rateAB}, {*b + ">" + *a, fb, fa, *delayBA, *rateBA}} {
		r, err := parseRate(c.rate)
		if err != nil {
			log.Fatalf("tbdelay: %v", err)
		}
		d := &direction{name: c.name, in: c.in, out: c.out, delay: int64(c.delay), rate: r, match: m, hasM: hasM,
			toggle: int64(*toggle), held: make(chan frame, maxQueued)}
		d.pool.New = func() any { b := make([]byte, maxFrame); return &b }
		dirs[i] = d
		go d.read()
		go d.writeHeld()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	out := map[string]any{"delay_ab_ns": int64(*delayAB), "delay_ba_ns": int64(*delayBA), "rate_ab": *rateAB, "rate_ba": *rateBA, "match": *match,
		"toggle_ns": int64(*toggle)}
	for _, d := range dirs {
		d.mu.Lock()
		st := d.st
		if st.Held > 0 {
			st.LateNS = float64(st.lateSum) / float64(st.Held)
		}
		if st.Frames > 0 {
			st.TransitNS = float64(st.transit) / float64(st.Frames-st.Dropped)
		}
		d.mu.Unlock()
		out[d.name] = st
	}
	w := os.Stderr
	if *logPath != "" {
		if f, err := os.Create(*logPath); err == nil {
			w = f
			defer f.Close()
		}
	}
	if err := json.NewEncoder(w).Encode(out); err != nil {
		log.Print(err)
	}
}
