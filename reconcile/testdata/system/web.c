/* web LISTEN_IP PORT DB_IP DB_PORT CACHE_IP CACHE_PORT LOGSOCK NREQ: the web
 * tier. It keeps one connection each to the database (db), the cache and
 * the logger (a UNIX socket), and serves HTTP/1.1 keep-alive connections
 * until it has answered NREQ requests. For each request "GET /item/N" or
 * "GET /big/N" it asks the database in two writes ("GET " and "key N\n")
 * and reads its answer, stores the value in the cache, logs the request,
 * and answers: the header in one write, the body in another (/item: the
 * database's value) or, for /big/N, N bytes written on a non-blocking
 * socket with a small send buffer (partial writes). It prints, per request:
 *   req <n> <client endpoint> <path> db <local endpoint> cache <local endpoint> body <bytes> partial <writes>
 */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 9)
		return 2;
	int ls = listen4(argv[1], atoi(argv[2]));
	int db = connect4(argv[3], atoi(argv[4]));
	int cache = connect4(argv[5], atoi(argv[6]));
	int lg = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un ua;
	memset(&ua, 0, sizeof ua);
	ua.sun_family = AF_UNIX;
	strncpy(ua.sun_path, argv[7], sizeof ua.sun_path - 1);
	for (int i = 0; connect(lg, (struct sockaddr *)&ua, sizeof ua) != 0; i++) {
		if (i == 50)
			die("connect logger");
		usleep(100000);
	}
	int nreq = atoi(argv[8]), served = 0;
	char dbep[64], cacheep[64], clep[64];
	endpoint(db, 0, dbep, sizeof dbep);
	endpoint(cache, 0, cacheep, sizeof cacheep);
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	static char body[400000], val[4096];
	memset(body, 'b', sizeof body);
	while (served < nreq) {
		int c = accept(ls, NULL, NULL);
		if (c < 0)
			die("accept");
		endpoint(c, 1, clep, sizeof clep);
		char req[4096];
		size_t got = 0;
		for (;;) {
			char *end;
			while (!(end = strstr(req, "\r\n\r\n"))) {
				if (got >= sizeof req - 1)
					die("request too long");
				ssize_t r = read(c, req + got, sizeof req - 1 - got);
				if (r <= 0)
					goto closed;
				got += (size_t)r;
				req[got] = 0;
			}
			char path[256] = "";
			sscanf(req, "GET %255s", path);
			size_t used = (size_t)(end + 4 - req);
			memmove(req, req + used, got - used);
			got -= used;
			req[got] = 0;
			int n = 0, big = strncmp(path, "/big/", 5) == 0;
			sscanf(path + (big ? 5 : 6), "%d", &n);

			/* The database, in two writes. */
			char q[64];
			write_all(db, "GET ", 4);
			int ql = snprintf(q, sizeof q, "key %d\n", n);
			write_all(db, q, (size_t)ql);
			char line[64];
			read_line(db, line, sizeof line);
			int vl = 0;
			sscanf(line, "VAL %d", &vl);
			if (vl < 0 || vl > (int)sizeof val)
				die("value size");
			read_full(db, val, (size_t)vl);

			/* The cache and the logger. */
			ql = snprintf(q, sizeof q, "PUT %d %d\n", n, vl);
			write_all(cache, q, (size_t)ql);
			read_line(cache, line, sizeof line);
			ql = snprintf(q, sizeof q, "req %d\n", n);
			write_all(lg, q, (size_t)ql);
			read_line(lg, line, sizeof line);

			/* The answer. */
			int bl = big ? n : vl;
			if (bl > (int)sizeof body)
				bl = sizeof body;
			char hdr[128];
			int hl = snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", bl);
			write_all(c, hdr, (size_t)hl);
			int partial = 0;
			if (big) {
				int sz = 4096;
				setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
				int fl = fcntl(c, F_GETFL);
				fcntl(c, F_SETFL, fl | O_NONBLOCK);
				partial = write_all(c, body, (size_t)bl);
				fcntl(c, F_SETFL, fl);
			} else {
				write_all(c, val, (size_t)bl);
			}
			served++;
			printf("req %d %s %s db %s cache %s body %d partial %d\n", served, clep, path, dbep, cacheep, bl, partial);
			fflush(stdout);
		}
	closed:
		close(c);
	}
	close(db);
	close(cache);
	close(lg);
	close(ls);
	return 0;
}
