// Command app is the application tier of the wirepath demo system: an HTTP
// server that answers nginx's proxied requests by talking to Redis (the
// database tier) and, for some requests, to the auth service. It is only
// used by make.sh to produce the demo captures.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"time"
)

var (
	listen = flag.String("listen", ":8080", "address to serve on")
	redis  = flag.String("redis", "10.20.0.31:6379", "Redis address")
	auth   = flag.String("auth", "10.20.0.41:9000", "auth service address")
)

// redisCmd sends one RESP command on a fresh connection and reads one reply.
func redisCmd(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", *redis, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(line, "$") && !strings.HasPrefix(line, "$-1") {
		var n int
		fmt.Sscanf(line, "$%d", &n)
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return strings.TrimSpace(line), nil
}

// checkAuth makes one request/response exchange with the auth service.
func checkAuth(user string) error {
	c, err := net.DialTimeout("tcp", *auth, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "CHECK %s\n", user); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func work(d time.Duration) { time.Sleep(d + time.Duration(rand.Int63n(int64(d/2+1)))) }

func main() {
	flag.Parse()
	http.HandleFunc("/item/", func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/item/")
		work(2 * time.Millisecond)
		v, err := redisCmd("GET", "item:"+id)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		work(1 * time.Millisecond)
		fmt.Fprintf(w, "item %s: %s\n", id, v)
	})
	http.HandleFunc("/cart", func(w http.ResponseWriter, r *http.Request) {
		work(1 * time.Millisecond)
		if err := checkAuth(r.URL.Query().Get("user")); err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		work(3 * time.Millisecond)
		v, err := redisCmd("LRANGE", "cart", "0", "-1")
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		work(2 * time.Millisecond)
		if _, err := redisCmd("INCR", "cart:views"); err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		fmt.Fprintf(w, "cart: %s\n", v)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
