/* fdreuse HOW TARGET ARG N: an application that closes its descriptors the
 * way daemons do and then opens a file or socket that gets the descriptor
 * number libwpcap keeps its log on (900).
 *   HOW     closefrom   glibc's closefrom(3) (glibc >= 2.34 makes the
 *                       close_range system call inside the C library)
 *           close_range the close_range() function
 *           syscall     the close_range system call made directly
 *   TARGET  file  ARG is a path, created and truncated
 *           tcp   ARG is a port on 127.0.0.1 to connect to
 * Before and after closing, it writes N messages of 1..100 bytes on a
 * socketpair and reads them back (traced calls, enough to fill the
 * library's buffer several times), and it writes "application data <i>\n"
 * to its target three times in between. Prints "target_fd <fd>" and
 * "pair_bytes <bytes written on the socketpairs>" (as many were read), or
 * only "skip <reason>" if descriptor 900 is beyond its limit. */
#include "common.h"
#include <sys/resource.h>
#include <sys/syscall.h>

static long exchange(long n)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	char buf[100];
	memset(buf, 'p', sizeof buf);
	long total = 0;
	for (long i = 0; i < n; i++) {
		size_t k = (size_t)(i % 100) + 1;
		write_all(sv[0], buf, k);
		size_t got = 0;
		while (got < k) {
			ssize_t r = read(sv[1], buf, k - got);
			if (r <= 0)
				die("read");
			got += (size_t)r;
		}
		total += (long)k;
	}
	close(sv[0]);
	close(sv[1]);
	return total;
}

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	const char *how = argv[1], *target = argv[2], *arg = argv[3];
	long n = atol(argv[4]);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 1000) {
		printf("skip RLIMIT_NOFILE below 1000\n");
		return 0;
	}
	long total = exchange(n);

	if (strcmp(how, "closefrom") == 0)
		closefrom(3);
	else if (strcmp(how, "close_range") == 0) {
		if (close_range(3, ~0U, 0) != 0)
			die("close_range");
	} else if (strcmp(how, "syscall") == 0) {
		if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
			die("close_range syscall");
	} else
		return 2;

	/* Fill the descriptors below 900, as a busy server would. */
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			die("open /dev/null");
		if (fd >= 899)
			break;
	}
	int t;
	if (strcmp(target, "file") == 0) {
		t = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (t < 0)
			die("open target");
	} else if (strcmp(target, "tcp") == 0) {
		t = socket(AF_INET, SOCK_STREAM, 0);
		if (t < 0)
			die("socket");
		struct sockaddr_in a = loopback(atoi(arg));
		if (connect(t, (struct sockaddr *)&a, sizeof a) != 0)
			die("connect");
	} else
		return 2;
	printf("target_fd %d\n", t);
	fflush(stdout);

	char line[64];
	for (int i = 0; i < 3; i++) {
		int k = snprintf(line, sizeof line, "application data %d\n", i);
		write_all(t, line, (size_t)k);
		total += exchange(n);
	}
	printf("pair_bytes %ld\n", total);
	fflush(stdout);
	/* The target stays open until exit: the library's last flush and end
	 * record come after this. */
	return 0;
}
