/* splicex N: moves N bytes each way over a loopback TCP connection with
 * splice, as proxies do. One direction: vmsplice of the application's
 * buffer into a pipe, splice from the pipe into the client socket; on the
 * server, splice from the socket into a pipe and read from the pipe. The
 * other direction the same, server to client. Prints "client_port <port>",
 * "server_port <port>" and "moved <bytes each way>". */
#include "common.h"

#define CHUNK 4000

/* push moves n bytes from memory into socket s through pipe p. */
static void push(int p[2], int s, long n)
{
	static char buf[CHUNK];
	memset(buf, 's', sizeof buf);
	while (n > 0) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;
		struct iovec iov = {buf, k};
		ssize_t v = vmsplice(p[1], &iov, 1, 0);
		if (v <= 0)
			die("vmsplice");
		while (v > 0) {
			ssize_t w = splice(p[0], NULL, s, NULL, (size_t)v, 0);
			if (w <= 0)
				die("splice to socket");
			v -= w;
			n -= w;
		}
	}
}

/* pull moves n bytes from socket s into memory through pipe p. */
static void pull(int p[2], int s, long n)
{
	char buf[CHUNK];
	while (n > 0) {
		size_t k = n < CHUNK ? (size_t)n : CHUNK;
		ssize_t r = splice(s, NULL, p[1], NULL, k, 0);
		if (r <= 0)
			die("splice from socket");
		n -= r;
		while (r > 0) {
			ssize_t g = read(p[0], buf, (size_t)r);
			if (g <= 0)
				die("read pipe");
			r -= g;
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	long n = atol(argv[1]);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loopback(0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0)
		die("listen");
	a = loopback(local_port(l));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		die("connect");
	int s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	int p1[2], p2[2];
	if (pipe(p1) != 0 || pipe(p2) != 0)
		die("pipe");
	/* In steps smaller than the socket buffers, so that one thread can
	 * do both ends. */
	for (long done = 0; done < n;) {
		long k = n - done < 16000 ? n - done : 16000;
		push(p1, c, k);
		pull(p2, s, k);
		push(p1, s, k);
		pull(p2, c, k);
		done += k;
	}
	printf("client_port %d\nserver_port %d\nmoved %ld\n", local_port(c), ntohs(a.sin_port), n);
	return 0;
}
