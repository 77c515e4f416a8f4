package synth

import (
	"time"

	"github.com/wirepath/wirepath/trace"
)

const (
	ms = time.Millisecond
	us = time.Microsecond
)

func call(to string, d Delay, kids ...Hop) Hop {
	return Hop{To: to, Kind: trace.KindCall, Delay: d, Bytes: 300, Children: kids}
}

func ret(to string, d Delay, kids ...Hop) Hop {
	return Hop{To: to, Kind: trace.KindReturn, Delay: d, Bytes: 4000, Children: kids}
}

// MultiTier is a three-tier LAN service in the spirit of Project 5's
// Figure 10: clients call two web servers; a request is a static page, a
// page that calls an application server which queries a database, or a
// page that first asks an authentication server, then the application
// server. rate is requests per second; the trace lasts d.
func MultiTier(rate float64, d time.Duration, seed uint64) System {
	lan := Delay{Fixed: 100 * us, Jitter: 20 * us}
	return System{
		Roles: []Role{
			{Name: "client", Hosts: 200},
			{Name: "web", Hosts: 2, Port: 80},
			{Name: "app", Hosts: 2, Port: 8009},
			{Name: "db", Hosts: 1, Port: 5432},
			{Name: "auth", Hosts: 1, Port: 389},
		},
		Templates: []Template{
			{Name: "static", Weight: 0.4, From: "client",
				Root: call("web", Delay{}, ret("client", Delay{Fixed: 200 * us, Exp: 2 * ms}))},
			{Name: "app", Weight: 0.35, From: "client",
				Root: call("web", Delay{},
					call("app", Delay{Fixed: 100 * us, Exp: 1 * ms},
						call("db", Delay{Fixed: 100 * us, Exp: 2 * ms},
							ret("app", Delay{Fixed: 200 * us, Exp: 3 * ms},
								ret("web", Delay{Fixed: 100 * us, Exp: 1 * ms},
									ret("client", Delay{Fixed: 100 * us, Exp: 1 * ms}))))))},
			{Name: "auth", Weight: 0.25, From: "client",
				Root: call("web", Delay{},
					call("auth", Delay{Fixed: 100 * us, Exp: 1 * ms},
						ret("web", Delay{Fixed: 200 * us, Exp: 2 * ms},
							call("app", Delay{Fixed: 100 * us, Exp: 1 * ms},
								ret("web", Delay{Fixed: 300 * us, Exp: 5 * ms},
									ret("client", Delay{Fixed: 100 * us, Exp: 1 * ms}))))))},
		},
		Net:      lan,
		Rate:     rate,
		Duration: d,
		Start:    1_700_000_000_000_000_000,
		Seed:     seed,
	}
}

// CDN is a wide-area content distribution network shaped like CoDeeN as
// WAP5 traced it: untraced clients call one of 115 proxies; a hit is
// answered at once; a miss goes to a peer proxy, which may look the origin
// up in DNS, fetches from the origin and answers through the first proxy;
// a few misses are fetched by the first proxy itself. Clients, DNS servers
// and origins are not traced, so their messages carry one timestamp.
// rate is requests per second; the trace lasts d.
func CDN(rate float64, d time.Duration, seed uint64) System {
	wan := Delay{Fixed: 5 * ms, Exp: 20 * ms}
	fetch := func(from string, kids ...Hop) Hop {
		return call("origin", Delay{Fixed: 100 * us, Exp: 500 * us},
			ret(from, Delay{Fixed: 1 * ms, Exp: 30 * ms}, kids...))
	}
	return System{
		Roles: []Role{
			{Name: "client", Hosts: 20000, Untraced: true},
			{Name: "proxy", Hosts: 115, Port: 3128},
			{Name: "peer", Like: "proxy"},
			{Name: "dns", Hosts: 4, Port: 53, Untraced: true},
			{Name: "origin", Hosts: 2000, Port: 80, Untraced: true},
		},
		Templates: []Template{
			{Name: "hit", Weight: 0.6, From: "client",
				Root: call("proxy", Delay{}, ret("client", Delay{Fixed: 100 * us, Exp: 1 * ms}))},
			{Name: "miss", Weight: 0.25, From: "client",
				Root: call("proxy", Delay{},
					call("peer", Delay{Fixed: 100 * us, Exp: 500 * us},
						fetch("peer",
							ret("proxy", Delay{Fixed: 50 * us, Exp: 300 * us},
								ret("client", Delay{Fixed: 50 * us, Exp: 300 * us})))))},
			{Name: "miss-dns", Weight: 0.1, From: "client",
				Root: call("proxy", Delay{},
					call("peer", Delay{Fixed: 100 * us, Exp: 500 * us},
						call("dns", Delay{Fixed: 100 * us, Exp: 300 * us},
							ret("peer", Delay{Fixed: 100 * us, Exp: 5 * ms},
								fetch("peer",
									ret("proxy", Delay{Fixed: 50 * us, Exp: 300 * us},
										ret("client", Delay{Fixed: 50 * us, Exp: 300 * us})))))))},
			{Name: "local-miss", Weight: 0.05, From: "client",
				Root: call("proxy", Delay{},
					fetch("proxy", ret("client", Delay{Fixed: 50 * us, Exp: 300 * us})))},
		},
		Net:         wan,
		Rate:        rate,
		Duration:    d,
		ClockOffset: 10 * time.Second,
		Start:       1_700_000_000_000_000_000,
		Seed:        seed,
	}
}
