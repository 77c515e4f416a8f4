// Command traffic makes the small, deterministic traffic that
// testdata/captures/make.sh captures with tcpdump and dumpcap: a
// request/response TCP server and client over IPv4 and IPv6, UDP
// queries, ICMP echoes, and 802.1Q / QinQ tagged frames injected with a
// packet socket (the kernel that made the captures had no 8021q module).
//
//	traffic server ADDR...            serve TCP and UDP on every ADDR (host:port)
//	traffic client HOST:PORT...       talk to each server
//	traffic ping ADDR...              ICMP/ICMPv6 echo requests
//	traffic vlan IFACE                send tagged frames out of IFACE
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 3 {
		log.Fatal("usage: traffic server|client|ping|vlan ARGS...")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "server":
		server(args)
	case "client":
		for _, a := range args {
			client(a)
		}
	case "ping":
		for _, a := range args {
			ping(a)
		}
	case "vlan":
		vlan(args[0])
	default:
		log.Fatalf("unknown mode %s", os.Args[1])
	}
}

// server answers "GET n size" lines on TCP with size bytes, and echoes UDP
// datagrams, until killed.
func server(addrs []string) {
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					log.Fatal(err)
				}
				go serve(c)
			}
		}()
		pc, err := net.ListenPacket("udp", a)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					log.Fatal(err)
				}
				pc.WriteTo(append([]byte("answer to "), buf[:n]...), from)
			}
		}()
	}
	fmt.Println("ready")
	select {}
}

func serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return
		}
		size, _ := strconv.Atoi(f[2])
		body := []byte(strings.Repeat(f[1]+" ", size)[:size])
		time.Sleep(2 * time.Millisecond) // the server "works"
		c.Write(append(body, '\n'))
	}
}

// client makes two connections of five requests each, then three UDP
// queries.
func client(addr string) {
	for conn := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			log.Fatal(err)
		}
		r := bufio.NewReader(c)
		for i := range 5 {
			fmt.Fprintf(c, "GET %d %d\n", conn*10+i, 100+i*200)
			if _, err := r.ReadString('\n'); err != nil {
				log.Fatal(err)
			}
			time.Sleep(3 * time.Millisecond)
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	pc, err := net.Dial("udp", addr)
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 2048)
	for i := range 3 {
		fmt.Fprintf(pc, "query %d", i)
		pc.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := pc.Read(buf); err != nil {
			log.Fatal(err)
		}
	}
	pc.Close()
}

// ping sends three echo requests and waits for the replies.
func ping(addr string) {
	ip := net.ParseIP(addr)
	network, typ := "ip4:icmp", byte(8)
	if ip.To4() == nil {
		network, typ = "ip6:ipv6-icmp", 128
	}
	c, err := net.ListenPacket(network, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1500)
	for seq := range 3 {
		msg := []byte{typ, 0, 0, 0, 0x12, 0x34, 0, byte(seq)}
		msg = append(msg, []byte("wirepath ping")...)
		if typ == 8 {
			binary.BigEndian.PutUint16(msg[2:], checksum(msg))
		} // the kernel computes the ICMPv6 checksum
		if _, err := c.WriteTo(msg, &net.IPAddr{IP: ip}); err != nil {
			log.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				log.Fatal(err)
			}
			if n >= 8 && (buf[0] == 0 || buf[0] == 129) && buf[7] == byte(seq) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// vlan sends UDP over IPv4 and IPv6 in 802.1Q frames (VLAN 100) and in
// QinQ frames (802.1ad service tag 200, customer tag 300).
func vlan(ifname string) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		log.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ALL)))
	if err != nil {
		log.Fatal(err)
	}
	defer syscall.Close(fd)
	sa := &syscall.SockaddrLinklayer{Ifindex: ifc.Index, Protocol: htons(syscall.ETH_P_ALL)}
	dst := net.HardwareAddr{0x02, 0x77, 0, 0, 0, 2}
	tags := [][][2]uint16{{{0x8100, 100}}, {{0x88a8, 200}, {0x8100, 300}}}
	for i := range 6 {
		t := tags[i%2]
		var l3 []byte
		var et uint16
		if i < 4 {
			et, l3 = 0x0800, ipv4UDP(net.IPv4(10, 77, 9, 1), net.IPv4(10, 77, 9, 2), uint16(i), []byte(fmt.Sprintf("tagged %d", i)))
		} else {
			et, l3 = 0x86dd, ipv6UDP(net.ParseIP("fd77:9::1"), net.ParseIP("fd77:9::2"), []byte(fmt.Sprintf("tagged %d", i)))
		}
		f := append([]byte{}, dst...)
		f = append(f, ifc.HardwareAddr...)
		for _, tag := range t {
			f = binary.BigEndian.AppendUint16(f, tag[0])
			f = binary.BigEndian.AppendUint16(f, tag[1])
		}
		f = binary.BigEndian.AppendUint16(f, et)
		f = append(f, l3...)
		if err := syscall.Sendto(fd, f, 0, sa); err != nil {
			log.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func ipv4UDP(src, dst net.IP, id uint16, payload []byte) []byte {
	u := udp(payload)
	b := make([]byte, 20)
	b[0], b[8], b[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(u)))
	binary.BigEndian.PutUint16(b[4:], id)
	copy(b[12:], src.To4())
	copy(b[16:], dst.To4())
	binary.BigEndian.PutUint16(b[10:], checksum(b))
	return append(b, u...)
}

func ipv6UDP(src, dst net.IP, payload []byte) []byte {
	u := udp(payload)
	pseudo := append(append([]byte{}, src.To16()...), dst.To16()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(u)))
	pseudo = append(pseudo, 0, 0, 0, 17)
	binary.BigEndian.PutUint16(u[6:], checksum(append(pseudo, u...)))
	b := make([]byte, 40)
	b[0], b[6], b[7] = 0x60, 17, 64
	binary.BigEndian.PutUint16(b[4:], uint16(len(u)))
	copy(b[8:], src.To16())
	copy(b[24:], dst.To16())
	return append(b, u...)
}

func udp(payload []byte) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b[0:], 4000)
	binary.BigEndian.PutUint16(b[2:], 4001)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	return append(b, payload...)
}
