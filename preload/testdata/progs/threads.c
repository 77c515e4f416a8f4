/* threads T N: T threads each write N messages of (i % 200) + 1 bytes on
 * a socketpair of their own and read them back at the other end, while the
 * main thread forks a child that does the same once. Exercises the
 * library's buffer under concurrent logging and fork from a threaded
 * process. Prints "bytes <total written by the threads>". */
#include "common.h"
#include <pthread.h>

static long per_thread;

static void *work(void *arg)
{
	(void)arg;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		die("socketpair");
	char buf[256];
	memset(buf, 't', sizeof buf);
	for (long i = 0; i < per_thread; i++) {
		size_t n = (size_t)(i % 200) + 1;
		write_all(sv[0], buf, n);
		size_t got = 0;
		while (got < n) {
			ssize_t r = read(sv[1], buf, n - got);
			if (r <= 0)
				die("read");
			got += (size_t)r;
		}
	}
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int t = atoi(argv[1]);
	per_thread = atol(argv[2]);
	pthread_t th[64];
	if (t > 64)
		t = 64;
	for (int i = 0; i < t; i++)
		pthread_create(&th[i], NULL, work, NULL);
	pid_t pid = fork(); /* while the threads log */
	if (pid == 0) {
		int sv[2];
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		write_all(sv[0], "child", 5);
		char b[5];
		if (read(sv[1], b, 5) != 5)
			die("child read");
		_exit(0);
	}
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	waitpid(pid, NULL, 0);
	long total = 0;
	for (long i = 0; i < per_thread; i++)
		total += (i % 200) + 1;
	printf("bytes %ld\n", total * t);
	return 0;
}
