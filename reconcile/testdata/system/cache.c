/* cache LISTEN_IP PORT: a key-value cache on a host no sniffer watches.
 * It serves one connection of "PUT key size\n" lines, answering "OK\n". */
#include "common.h"

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int ls = listen4(argv[1], atoi(argv[2]));
	int c = accept(ls, NULL, NULL);
	if (c < 0)
		die("accept");
	char line[256];
	while (read_line(c, line, sizeof line) > 0)
		write_all(c, "OK\n", 3);
	close(c);
	close(ls);
	return 0;
}
