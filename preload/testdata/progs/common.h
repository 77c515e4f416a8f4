/* Helpers shared by the test programs that run under libwpcap. Each
 * program prints its ground truth (what it sent and received) as
 * "key value" lines on stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void die(const char *what)
{
	perror(what);
	exit(1);
}

static inline struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static inline int local_port(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	if (getsockname(fd, (struct sockaddr *)&a, &l) != 0)
		die("getsockname");
	return ntohs(a.sin_port);
}

/* write_all writes n bytes with write(), as many calls as it takes. */
static inline void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}
