/* nonblock PORT BYTES: a client on a non-blocking TCP socket sends BYTES
 * bytes with send() in 64 KiB calls, waiting with poll() on EAGAIN, to a
 * forked server on 127.0.0.1:PORT that starts reading only after 50 ms,
 * with small recv()s.
 * Partial writes and EAGAIN happen; the trace must count only the bytes
 * really sent. Prints "sent <bytes> calls <n> eagain <n> partial <n>" and
 * the server "received <bytes>". */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int port = atoi(argv[1]);
	long total = atol(argv[2]);
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = loopback(port);
	if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	if (listen(ls, 1) != 0)
		die("listen");
	pid_t pid = fork();
	if (pid == 0) {
		int c = accept(ls, NULL, NULL);
		close(ls);
		usleep(50000);
		long got = 0;
		char b[1500];
		for (;;) {
			ssize_t r = recv(c, b, sizeof b, 0);
			if (r <= 0)
				break;
			got += r;
		}
		printf("received %ld\n", got);
		fflush(stdout);
		close(c);
		_exit(0);
	}
	close(ls);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int small = 8192;
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
	if (connect(s, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
		die("connect");
	struct pollfd p = {s, POLLOUT, 0};
	poll(&p, 1, 5000);
	static char buf[65536];
	memset(buf, 'n', sizeof buf);
	long sent = 0, calls = 0, eagain = 0, partial = 0;
	while (sent < total) {
		size_t n = (size_t)(total - sent < (long)sizeof buf ? total - sent : (long)sizeof buf);
		ssize_t w = send(s, buf, n, 0);
		calls++;
		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				die("send");
			eagain++;
			poll(&p, 1, 5000);
			continue;
		}
		if ((size_t)w < n)
			partial++;
		sent += w;
	}
	close(s);
	waitpid(pid, NULL, 0);
	printf("sent %ld calls %ld eagain %ld partial %ld\n", sent, calls, eagain, partial);
	return 0;
}
