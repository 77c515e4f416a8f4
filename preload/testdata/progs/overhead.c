/* overhead N: times N iterations of three kinds of calls and prints the
 * mean nanoseconds of CPU time (the process's, so that other jobs on a
 * busy machine count less) per iteration, to measure what libwpcap adds:
 *   file_read  read() of 64 bytes from /dev/zero (not traced: the cost of
 *              the descriptor check)
 *   unix_rw    write() of 64 bytes on a socketpair and read() at the other
 *              end (two traced calls)
 *   udp_rw     send() of 64 bytes on a connected UDP socket and recv() at
 *              the bound end (two traced calls, each with a checksum) */
#include "common.h"
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	long n = atol(argv[1]);
	char buf[64];
	memset(buf, 'b', sizeof buf);

	int z = open("/dev/zero", O_RDONLY);
	double t0 = now();
	for (long i = 0; i < n; i++)
		if (read(z, buf, sizeof buf) != (ssize_t)sizeof buf)
			die("read");
	printf("file_read %.1f\n", (now() - t0) / (double)n);

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	t0 = now();
	for (long i = 0; i < n; i++) {
		if (write(sv[0], buf, sizeof buf) != (ssize_t)sizeof buf || read(sv[1], buf, sizeof buf) != (ssize_t)sizeof buf)
			die("unix");
	}
	printf("unix_rw %.1f\n", (now() - t0) / (double)n);

	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in la = loopback(0);
	if (bind(b, (struct sockaddr *)&la, sizeof la) != 0)
		die("bind");
	struct sockaddr_in lb = loopback(local_port(b));
	if (connect(a, (struct sockaddr *)&lb, sizeof lb) != 0)
		die("connect");
	t0 = now();
	for (long i = 0; i < n; i++) {
		if (send(a, buf, sizeof buf, 0) != (ssize_t)sizeof buf || recv(b, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
			die("udp");
	}
	printf("udp_rw %.1f\n", (now() - t0) / (double)n);
	return 0;
}
