/* udpx PORT N: a UDP echo exchange on loopback between two processes. The
 * parent binds a server socket and forks a client, which sends N
 * datagrams (sendto for even i, sendmsg for odd i) of (i*37)%1000+1 bytes
 * and reads each echo (recvfrom, recvmsg with and without msg_name). The server echoes with
 * recvfrom/sendto. Prints "server <port>", and per datagram
 * "dgram <i> <bytes> <crc32>" from the client (the checksum the test
 * expects, computed here independently of the library). At the end the
 * client sends two more datagrams in one sendmmsg(), the server reads
 * them with one recvmmsg() and echoes them with one sendmmsg(), and the
 * client reads the echoes with one recvmmsg(); their "dgram" lines
 * follow the others. */
#include "common.h"
#include <stdint.h>

static uint32_t crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = loopback(atoi(argv[1]));
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	int port = local_port(s);
	printf("server %d\n", port);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(s);
		int c = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in srv = loopback(port);
		unsigned char buf[2048], back[2048];
		for (int i = 0; i < n; i++) {
			size_t len = (size_t)((i * 37) % 1000 + 1);
			for (size_t j = 0; j < len; j++)
				buf[j] = (unsigned char)(i * 7 + j * 13);
			if (i % 2 == 0) {
				if (sendto(c, buf, len, 0, (struct sockaddr *)&srv, sizeof srv) != (ssize_t)len)
					die("sendto");
			} else {
				struct iovec iov[2] = {{buf, len / 2}, {buf + len / 2, len - len / 2}};
				struct msghdr m = {.msg_name = &srv, .msg_namelen = sizeof srv, .msg_iov = iov, .msg_iovlen = 2};
				if (sendmsg(c, &m, 0) != (ssize_t)len)
					die("sendmsg");
			}
			ssize_t r;
			if (i % 2 == 0) {
				r = recvfrom(c, back, sizeof back, 0, NULL, NULL);
			} else {
				/* Every other recvmsg does not ask for the sender: the
				 * library must record it all the same. */
				struct sockaddr_in from;
				struct iovec iov = {back, sizeof back};
				struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
				if (i % 4 == 3) {
					m.msg_name = NULL;
					m.msg_namelen = 0;
				}
				r = recvmsg(c, &m, 0);
			}
			if (r != (ssize_t)len || memcmp(buf, back, len) != 0)
				die("echo");
			printf("dgram %d %zu %08x\n", i, len, crc32(buf, len));
		}
		/* Two datagrams in one sendmmsg and one recvmmsg. */
		unsigned char mb[2][64], rb[2][64];
		struct iovec miov[2], riov[2];
		struct mmsghdr mm[2], rm[2];
		memset(mm, 0, sizeof mm);
		memset(rm, 0, sizeof rm);
		for (int k = 0; k < 2; k++) {
			size_t len = (size_t)(10 + k * 20);
			memset(mb[k], 'A' + k, len);
			miov[k] = (struct iovec){mb[k], len};
			mm[k].msg_hdr.msg_name = &srv;
			mm[k].msg_hdr.msg_namelen = sizeof srv;
			mm[k].msg_hdr.msg_iov = &miov[k];
			mm[k].msg_hdr.msg_iovlen = 1;
			riov[k] = (struct iovec){rb[k], sizeof rb[k]};
			rm[k].msg_hdr.msg_iov = &riov[k];
			rm[k].msg_hdr.msg_iovlen = 1;
		}
		if (sendmmsg(c, mm, 2, 0) != 2)
			die("sendmmsg");
		if (recvmmsg(c, rm, 2, 0, NULL) != 2 || rm[0].msg_len != 10 || rm[1].msg_len != 30)
			die("recvmmsg");
		for (int k = 0; k < 2; k++)
			printf("dgram %d %zu %08x\n", n + k, miov[k].iov_len, crc32(mb[k], miov[k].iov_len));
		printf("client %d\n", local_port(c));
		fflush(stdout);
		close(c);
		_exit(0);
	}
	unsigned char buf[2048];
	for (int i = 0; i < n; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t r = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (r < 0)
			die("recvfrom");
		if (sendto(s, buf, (size_t)r, 0, (struct sockaddr *)&from, fl) != r)
			die("sendto");
	}
	unsigned char mb[2][64];
	struct iovec miov[2];
	struct sockaddr_in from[2];
	struct mmsghdr mm[2];
	memset(mm, 0, sizeof mm);
	for (int k = 0; k < 2; k++) {
		miov[k] = (struct iovec){mb[k], sizeof mb[k]};
		mm[k].msg_hdr.msg_name = &from[k];
		mm[k].msg_hdr.msg_namelen = sizeof from[k];
		mm[k].msg_hdr.msg_iov = &miov[k];
		mm[k].msg_hdr.msg_iovlen = 1;
	}
	if (recvmmsg(s, mm, 2, 0, NULL) != 2)
		die("server recvmmsg");
	for (int k = 0; k < 2; k++)
		miov[k].iov_len = mm[k].msg_len;
	if (sendmmsg(s, mm, 2, 0) != 2)
		die("server sendmmsg");
	waitpid(pid, NULL, 0);
	close(s);
	return 0;
}
