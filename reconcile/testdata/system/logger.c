/* logger PATH: a log service on a UNIX-domain socket of the web host. It
 * serves one connection of lines, answering each with "ok\n". */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	memset(&a, 0, sizeof a);
	a.sun_family = AF_UNIX;
	strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
	unlink(argv[1]);
	if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 4) != 0)
		die("bind");
	int c = accept(ls, NULL, NULL);
	if (c < 0)
		die("accept");
	char line[256];
	while (read_line(c, line, sizeof line) > 0)
		write_all(c, "ok\n", 3);
	close(c);
	close(ls);
	unlink(argv[1]);
	return 0;
}
