/* httpsrv PORT NCONN BODY: a forking HTTP/1.0 server on 127.0.0.1:PORT.
 * For each of NCONN connections a child reads the request (readv first,
 * then read) up to the blank line and answers with a header (writev, two
 * pieces) and a body of BODY bytes: the first half with send(), in pieces
 * of at most 4000 bytes, the rest with sendfile() from a memfd; the parent
 * closes its copy and goes on accepting. Prints per connection:
 *   conn <client-port> recv <bytes> sent <bytes> pid <child pid> */
#include "common.h"
#include <sys/mman.h>
#include <sys/sendfile.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int port = atoi(argv[1]), nconn = atoi(argv[2]), body = atoi(argv[3]);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = loopback(port);
	if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	if (listen(ls, 16) != 0)
		die("listen");
	printf("listening %d\n", local_port(ls));
	fflush(stdout);
	for (int i = 0; i < nconn; i++) {
		struct sockaddr_in peer;
		socklen_t pl = sizeof peer;
		int c = accept(ls, (struct sockaddr *)&peer, &pl);
		if (c < 0)
			die("accept");
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(ls);
			char req[8192];
			size_t got = 0;
			while (got < sizeof req - 1) {
				ssize_t r;
				if (got == 0) {
					struct iovec v[2] = {{req, 16}, {req + 16, sizeof req - 17}};
					r = readv(c, v, 2);
				} else {
					r = read(c, req + got, sizeof req - 1 - got);
				}
				if (r <= 0)
					break;
				got += (size_t)r;
				req[got] = 0;
				if (strstr(req, "\r\n\r\n"))
					break;
			}
			char hdr[256];
			int hl = snprintf(hdr, sizeof hdr, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", body);
			struct iovec iov[2] = {{hdr, 17}, {hdr + 17, (size_t)hl - 17}};
			ssize_t sent = writev(c, iov, 2);
			char *b = malloc((size_t)body + 1);
			memset(b, 'x', (size_t)body);
			int half = body / 2;
			for (int off = 0; off < half;) {
				int n = half - off > 4000 ? 4000 : half - off;
				ssize_t w = send(c, b + off, (size_t)n, 0);
				if (w < 0)
					die("send");
				off += (int)w;
				sent += w;
			}
			int mf = memfd_create("body", 0);
			write_all(mf, b + half, (size_t)(body - half));
			off_t pos = 0;
			while (pos < body - half) {
				ssize_t w = sendfile(c, mf, &pos, (size_t)(body - half) - (size_t)pos);
				if (w <= 0)
					die("sendfile");
				sent += w;
			}
			close(mf);
			shutdown(c, SHUT_WR);
			char drain[64];
			while (read(c, drain, sizeof drain) > 0) {
			}
			close(c);
			printf("conn %d recv %zu sent %zd pid %d\n", ntohs(peer.sin_port), got, sent, (int)getpid());
			fflush(stdout);
			_exit(0);
		}
		close(c);
	}
	while (wait(NULL) > 0) {
	}
	close(ls);
	return 0;
}
