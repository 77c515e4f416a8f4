/* Helpers shared by the programs of the reconcile test system. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

static inline void die(const char *what)
{
	perror(what);
	exit(1);
}

static inline struct sockaddr_in addr4(const char *ip, int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die(ip);
	return a;
}

static inline int listen4(const char *ip, int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = addr4(ip, port);
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	if (listen(s, 16) != 0)
		die("listen");
	return s;
}

static inline int connect4(const char *ip, int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = addr4(ip, port);
	for (int i = 0; connect(s, (struct sockaddr *)&a, sizeof a) != 0; i++) {
		if (i == 50)
			die("connect");
		close(s);
		usleep(100000);
		s = socket(AF_INET, SOCK_STREAM, 0);
	}
	return s;
}

static inline char *endpoint(int fd, int peer, char *buf, size_t n)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	if ((peer ? getpeername(fd, (struct sockaddr *)&a, &l) : getsockname(fd, (struct sockaddr *)&a, &l)) != 0)
		die("getsockname");
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
	snprintf(buf, n, "%s:%d", ip, ntohs(a.sin_port));
	return buf;
}

/* write_all writes n bytes with write(), as many calls as it takes; on a
 * non-blocking socket it waits for room with poll() and counts the calls
 * that moved fewer bytes than asked. */
static inline int write_all(int fd, const char *p, size_t n)
{
	int partial = 0;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {fd, POLLOUT, 0};
			poll(&pf, 1, 1000);
			continue;
		}
		if (w < 0)
			die("write");
		if ((size_t)w < n)
			partial++;
		p += w;
		n -= (size_t)w;
	}
	return partial;
}

/* read_line reads one line ending in '\n' into buf with read(), one call per
 * byte run; it returns its length, 0 at the end of the stream. */
static inline size_t read_line(int fd, char *buf, size_t n)
{
	size_t got = 0;
	while (got < n - 1) {
		ssize_t r = read(fd, buf + got, 1);
		if (r <= 0)
			break;
		got++;
		if (buf[got - 1] == '\n')
			break;
	}
	buf[got] = 0;
	return got;
}

static inline void read_full(int fd, char *buf, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, buf, n);
		if (r <= 0)
			die("read_full");
		buf += r;
		n -= (size_t)r;
	}
}
