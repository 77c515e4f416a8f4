/* unixsock PATH: UNIX-domain sockets between two processes.
 * 1. socketpair + fork: the parent writes "ping" messages of 10..14
 *    bytes, the child answers each with a 3-byte "ok\n".
 * 2. a listening socket at PATH: a forked client connects, duplicates
 *    the descriptor with fcntl(F_DUPFD_CLOEXEC), closes the original,
 *    sends 100 bytes with send() on the duplicate and reads a 50-byte
 *    reply.
 * Prints "pair-parent <pid>", "pair-child <pid>", "path-server <pid>",
 * "path-client <pid>". */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	printf("pair-parent %d\n", (int)getpid());
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		printf("pair-child %d\n", (int)getpid());
		fflush(stdout);
		char b[64];
		for (int i = 0; i < 5; i++) {
			size_t want = (size_t)(10 + i), got = 0;
			while (got < want) {
				ssize_t r = read(sv[1], b, want - got);
				if (r <= 0)
					die("pair read");
				got += (size_t)r;
			}
			write_all(sv[1], "ok\n", 3);
		}
		close(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	char msg[64];
	memset(msg, 'p', sizeof msg);
	for (int i = 0; i < 5; i++) {
		write_all(sv[0], msg, (size_t)(10 + i));
		char b[3];
		size_t got = 0;
		while (got < 3) {
			ssize_t r = read(sv[0], b + got, 3 - got);
			if (r <= 0)
				die("pair reply");
			got += (size_t)r;
		}
	}
	close(sv[0]);
	waitpid(pid, NULL, 0);

	unlink(argv[1]);
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
	if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	if (listen(ls, 4) != 0)
		die("listen");
	printf("path-server %d\n", (int)getpid());
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(ls);
		int c0 = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(c0, (struct sockaddr *)&a, sizeof a) != 0)
			die("connect");
		/* Go on with a duplicate, as Python's os.dup does. */
		int c = fcntl(c0, F_DUPFD_CLOEXEC, 10);
		if (c < 0)
			die("F_DUPFD");
		close(c0);
		printf("path-client %d\n", (int)getpid());
		fflush(stdout);
		char b[100];
		memset(b, 'c', sizeof b);
		if (send(c, b, sizeof b, 0) != (ssize_t)sizeof b)
			die("send");
		size_t got = 0;
		while (got < 50) {
			ssize_t r = recv(c, b, 50 - got, 0);
			if (r <= 0)
				die("recv");
			got += (size_t)r;
		}
		close(c);
		_exit(0);
	}
	int c = accept(ls, NULL, NULL); /* no peer address asked for */
	if (c < 0)
		die("accept");
	char b[100];
	size_t got = 0;
	while (got < 100) {
		ssize_t r = recv(c, b + got, 100 - got, 0);
		if (r <= 0)
			die("server recv");
		got += (size_t)r;
	}
	memset(b, 's', 50);
	write_all(c, b, 50);
	close(c);
	close(ls);
	waitpid(pid, NULL, 0);
	unlink(argv[1]);
	return 0;
}
