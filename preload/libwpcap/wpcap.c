/*
 * libwpcap: wirepath's LD_PRELOAD socket-call capture library.
 *
 * It interposes on the C library's socket API (and read/write family on
 * socket descriptors), in the manner of LibSockCap (WAP5 section 3), and
 * writes one JSON Lines record per call to a log file per process. The
 * format is "wirepath preload trace" version 2, documented in docs/formats.md and
 * docs/preload.md; the Go package preload parses it.
 *
 *   LD_PRELOAD=bin/libwpcap.so WIREPATH_PRELOAD_DIR=/tmp/traces curl ...
 *
 * Environment:
 *   WIREPATH_PRELOAD_DIR    directory for the logs (default
 *                           $XDG_RUNTIME_DIR/wirepath-preload, else
 *                           $XDG_CACHE_HOME or ~/.cache/wirepath-preload;
 *                           created 0700 if missing; a symbolic link or a
 *                           directory another user owns is refused)
 *   WIREPATH_PRELOAD_HOST   host name written in the headers, at most 1024
 *                           bytes (default gethostname())
 *   WIREPATH_PRELOAD_FLUSH  "record": write every record at once (for
 *                           processes that are killed); default: buffer
 *                           64 KiB, flush at least once a second while
 *                           calls are logged, and at exit, fork and exec
 *   WIREPATH_PRELOAD_EAGAIN "1": log calls that fail with EAGAIN (by
 *                           default they are only counted)
 *
 * Design notes:
 * - No message contents are recorded; datagrams get a CRC-32 of their
 *   payload so that both ends of a datagram can be matched.
 * - Only descriptors of AF_INET, AF_INET6 and AF_UNIX sockets are traced.
 *   Whether an fd is such a socket is cached per fd (fstat and getsockopt
 *   once), so reads and writes of files cost one table lookup.
 * - Records are built on the stack and appended to one process-wide
 *   buffer under a mutex (a record longer than the stack buffer continues
 *   in the shared one, whole); the buffer is written with the raw write
 *   system call, so the library never re-enters itself. A thread-local flag also
 *   passes calls made while logging straight through.
 * - errno is preserved across logging.
 * - The library never writes into a descriptor it does not own: before
 *   every write it checks (device and inode) that its log descriptor
 *   still refers to its file, as applications close descriptors behind
 *   its back (glibc's closefrom, raw close_range) and may reuse the
 *   number; it then reopens its file by name (or starts a new one).
 * - fork: pthread_atfork handlers flush the parent's buffer before the
 *   fork; the child drops its copy and starts its own log (header with
 *   ppid). vfork is run as fork. exec: the buffer is flushed first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define WPCAP_VERSION 2
#define EXPORT __attribute__((visibility("default")))

/* ---- real functions ---------------------------------------------------- */

#define REAL(name) real_##name
#define DECL_REAL(ret, name, ...) static ret (*real_##name)(__VA_ARGS__)
#define RESOLVE(name)                                                     \
	do {                                                              \
		if (!real_##name)                                         \
			*(void **)(&real_##name) = dlsym(RTLD_NEXT, #name); \
	} while (0)

DECL_REAL(int, socket, int, int, int);
DECL_REAL(int, socketpair, int, int, int, int *);
DECL_REAL(int, connect, int, const struct sockaddr *, socklen_t);
DECL_REAL(int, accept, int, struct sockaddr *, socklen_t *);
DECL_REAL(int, accept4, int, struct sockaddr *, socklen_t *, int);
DECL_REAL(int, bind, int, const struct sockaddr *, socklen_t);
DECL_REAL(int, listen, int, int);
DECL_REAL(ssize_t, send, int, const void *, size_t, int);
DECL_REAL(ssize_t, sendto, int, const void *, size_t, int, const struct sockaddr *, socklen_t);
DECL_REAL(ssize_t, sendmsg, int, const struct msghdr *, int);
DECL_REAL(int, sendmmsg, int, struct mmsghdr *, unsigned int, int);
DECL_REAL(ssize_t, recv, int, void *, size_t, int);
DECL_REAL(ssize_t, recvfrom, int, void *, size_t, int, struct sockaddr *, socklen_t *);
DECL_REAL(ssize_t, recvmsg, int, struct msghdr *, int);
DECL_REAL(int, recvmmsg, int, struct mmsghdr *, unsigned int, int, struct timespec *);
DECL_REAL(ssize_t, write, int, const void *, size_t);
DECL_REAL(ssize_t, read, int, void *, size_t);
DECL_REAL(ssize_t, writev, int, const struct iovec *, int);
DECL_REAL(ssize_t, readv, int, const struct iovec *, int);
DECL_REAL(ssize_t, sendfile, int, int, off_t *, size_t);
DECL_REAL(ssize_t, sendfile64, int, int, off64_t *, size_t);
DECL_REAL(ssize_t, splice, int, off64_t *, int, off64_t *, size_t, unsigned int);
DECL_REAL(ssize_t, __read_chk, int, void *, size_t, size_t);
DECL_REAL(ssize_t, __recv_chk, int, void *, size_t, size_t, int);
DECL_REAL(ssize_t, __recvfrom_chk, int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
DECL_REAL(int, close, int);
DECL_REAL(int, close_range, unsigned int, unsigned int, int);
DECL_REAL(void, closefrom, int);
DECL_REAL(int, shutdown, int, int);
DECL_REAL(int, dup, int);
DECL_REAL(int, dup2, int, int);
DECL_REAL(int, dup3, int, int, int);
DECL_REAL(int, fcntl, int, int, ...);
DECL_REAL(int, fcntl64, int, int, ...);
DECL_REAL(pid_t, fork, void);
DECL_REAL(int, execve, const char *, char *const[], char *const[]);
DECL_REAL(int, execv, const char *, char *const[]);
DECL_REAL(int, execvp, const char *, char *const[]);
DECL_REAL(int, execvpe, const char *, char *const[], char *const[]);
DECL_REAL(void, _exit, int);
DECL_REAL(void, _Exit, int);

/* ---- state ------------------------------------------------------------- */

#define BUF_SIZE (64 * 1024)
/* Records are built in a buffer of this size on the stack; a longer one
 * (a long executable path, escaped names) continues in the shared buffer,
 * whole: no record is ever cut. */
#define LINE_MAX_LEN 2048
#define FD_CACHE 65536
#define FLUSH_INTERVAL_NS 1000000000ULL
/* The log is moved to a descriptor at least this high, out of the low
 * numbers applications expect. */
#define LOG_FD_MIN 900
/* The longest WIREPATH_PRELOAD_HOST taken (DNS names have at most 253
 * bytes); a longer one is refused, not cut. */
#define HOST_MAX 1024
/* How much of the host name goes into a file name (NAME_MAX is 255). */
#define FILE_HOST_MAX 64

/* fd cache bits. The sock kind (1..7) lives in bits 4-6. */
#define FD_KNOWN 1u     /* the entry is valid */
#define FD_SOCK 2u      /* a traced socket (AF_INET, AF_INET6, AF_UNIX) */
#define FD_DESCRIBED 4u /* its endpoints were logged in this process */
#define FD_KIND_SHIFT 4

enum sock_kind { K_NONE, K_TCP, K_UDP, K_UNIX_STREAM, K_UNIX_DGRAM, K_UNIX_SEQPACKET, K_RAW, K_OTHER };
static const char *const kind_names[] = {"", "tcp", "udp", "unix-stream", "unix-dgram", "unix-seqpacket", "raw", "other"};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char buf[BUF_SIZE];
static size_t blen;
static int logfd = -1;
/* What logfd must refer to: the file the library created, by device and
 * inode, and its name in logdir ("" when there is none). */
struct file_id {
	unsigned int major, minor;
	unsigned long long ino;
};
static struct file_id log_id;
static char logname[NAME_MAX + 1];
static int enabled;
static int flush_each;
static int log_eagain;
static pid_t mypid;
static unsigned long long last_flush;
static unsigned long long eagain_skipped;
static unsigned long long records;
static unsigned long long write_errors;
static unsigned long long lost_records; /* not written: no log, or a failed write */
static unsigned long long log_reopens;  /* the application closed or replaced the log's descriptor */
static unsigned char fdstate[FD_CACHE];
static char logdir[PATH_MAX];
static char hostname[HOST_MAX + 1];
static char filehost[FILE_HOST_MAX + 1]; /* hostname as a file name part */
static unsigned reopen_seq;

static __thread int in_hook __attribute__((tls_model("initial-exec")));
static __thread pid_t my_tid __attribute__((tls_model("initial-exec")));

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static pid_t cur_tid(void)
{
	if (!my_tid)
		my_tid = (pid_t)syscall(SYS_gettid);
	return my_tid;
}

/* ---- line building ----------------------------------------------------- */

/* A record being built. What does not fit in b goes on, in order, to the
 * shared buffer (the thread then holds mu until emit) or, for the header
 * of a new log, straight to the file. */
struct line {
	char *p, *end;
	int sink;   /* >= 0: the descriptor of a new log, for its header */
	int locked; /* the record outgrew b: mu is held, b continues in buf */
	char b[LINE_MAX_LEN];
};

static void l_init(struct line *l)
{
	l->p = l->b;
	l->end = l->b + sizeof l->b;
	l->sink = -1;
	l->locked = 0;
}

static void l_spill(struct line *l, const char *s, size_t n);

static inline void l_raw(struct line *l, const char *s, size_t n)
{
	if (__builtin_expect((size_t)(l->end - l->p) < n, 0)) {
		l_spill(l, s, n);
		return;
	}
	memcpy(l->p, s, n);
	l->p += n;
}

static void l_str(struct line *l, const char *s) { l_raw(l, s, strlen(s)); }

static void l_ll(struct line *l, long long v)
{
	char t[24];
	int i = sizeof t;
	unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;
	do {
		t[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[--i] = '-';
	l_raw(l, t + i, sizeof t - (size_t)i);
}

static void l_key(struct line *l, const char *k)
{
	l_raw(l, ",\"", 2);
	l_str(l, k);
	l_raw(l, "\":", 2);
}

static void l_kint(struct line *l, const char *k, long long v)
{
	l_key(l, k);
	l_ll(l, v);
}

/* l_jstr writes s[0:n] as a JSON string, escaping quotes, backslashes and
 * control characters (NULs of abstract socket names included). */
static void l_jstr(struct line *l, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	l_raw(l, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			l_raw(l, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			l_raw(l, e, 6);
		} else {
			l_raw(l, (const char *)&c, 1);
		}
	}
	l_raw(l, "\"", 1);
}

static void l_kstr(struct line *l, const char *k, const char *s)
{
	l_key(l, k);
	l_jstr(l, s, strlen(s));
}

/* ---- output ------------------------------------------------------------ */

static unsigned long long count_lines(const char *p, size_t n)
{
	unsigned long long c = 0;
	for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
		c++;
	return c;
}

static void raw_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = syscall(SYS_write, fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			write_errors++;
			lost_records += count_lines(p, n);
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void read_small_file(const char *path, char *out, size_t n)
{
	out[0] = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = syscall(SYS_read, fd, out, n - 1);
	syscall(SYS_close, fd);
	if (r <= 0)
		return;
	out[r] = 0;
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
}

/* move_high moves fd to a descriptor of LOG_FD_MIN or more when it can. */
static int move_high(int fd)
{
	int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
	if (hi < 0)
		return fd;
	syscall(SYS_close, fd);
	return hi;
}

/* file_id_of gets the device and inode of what fd refers to. statx asked
 * for the inode only costs a third of an fstat after writes (ext4 works
 * out the block count for fstat), and does not ask a network file system. */
static int file_id_of(int fd, struct file_id *id)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO, &sx) != 0)
		return -1;
	id->major = sx.stx_dev_major;
	id->minor = sx.stx_dev_minor;
	id->ino = sx.stx_ino;
	return 0;
}

static int same_file(const struct file_id *a, const struct file_id *b)
{
	return a->ino == b->ino && a->major == b->major && a->minor == b->minor;
}

/* use_log makes fd, a descriptor of the file id, the log. */
static void use_log(int fd, const struct file_id *id)
{
	logfd = move_high(fd);
	log_id = *id;
	if (logfd < FD_CACHE)
		fdstate[logfd] = FD_KNOWN;
}

/* open_logdir opens the log directory, for the files to be created in it
 * with openat. It refuses a symbolic link (a planted one would send the
 * traces elsewhere) and a directory that neither this user nor root owns
 * (its owner could read, remove and replace the traces). Returns -1 and
 * why otherwise. */
static int open_logdir(const char **why)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, logdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0) {
		int e = errno;
		if (lstat(logdir, &sb) == 0 && S_ISLNK(sb.st_mode))
			*why = "a symbolic link (refused)";
		else
			*why = strerrorname_np(e) ? strerrorname_np(e) : "cannot be opened";
		return -1;
	}
	if (fstat(fd, &sb) != 0 || (sb.st_uid != geteuid() && sb.st_uid != 0)) {
		syscall(SYS_close, fd);
		*why = "owned by another user (refused)";
		return -1;
	}
	return fd;
}

/* open_log creates this process's log file and writes its header record:
 * in the checked directory, never through a symbolic link nor onto an
 * existing file, readable by the user only. Called with mu held (or before
 * threads exist). Returns NULL, or why there is no log. */
static const char *open_log(pid_t ppid)
{
	const char *why = NULL;
	logfd = -1;
	int dfd = open_logdir(&why);
	if (dfd < 0) {
		logname[0] = 0;
		return why;
	}
	unsigned long long start = now_ns();
	int fd = -1, e = 0;
	for (int tries = 0; tries < 8 && fd < 0; tries++) { /* a name taken: the next number */
		snprintf(logname, sizeof logname, "wpcap-%s-%d-%llu-%u.jsonl", filehost, (int)mypid, start, reopen_seq++);
		fd = (int)syscall(SYS_openat, dfd, logname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC,
				  0600);
		e = errno;
		if (fd < 0 && e != EEXIST)
			break;
	}
	syscall(SYS_close, dfd);
	struct file_id id;
	if (fd >= 0 && file_id_of(fd, &id) != 0) {
		e = errno;
		syscall(SYS_close, fd);
		fd = -1;
	}
	if (fd < 0) {
		logname[0] = 0;
		return strerrorname_np(e) ? strerrorname_np(e) : "cannot create a file";
	}
	use_log(fd, &id);
	char comm[64], exe[PATH_MAX];
	read_small_file("/proc/self/comm", comm, sizeof comm);
	ssize_t n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	struct line l;
	l_init(&l);
	l.sink = logfd;
	l_str(&l, "{\"wirepath_preload\":");
	l_ll(&l, WPCAP_VERSION);
	l_kstr(&l, "tool", "libwpcap");
	l_kstr(&l, "host", hostname);
	l_kint(&l, "pid", mypid);
	l_kint(&l, "ppid", ppid);
	l_kstr(&l, "process", comm[0] ? comm : program_invocation_short_name);
	l_kstr(&l, "exe", exe);
	l_kint(&l, "start_ts", (long long)start);
	l_raw(&l, "}\n", 2);
	/* The header goes to the file at once, so that a process that dies
	 * without logging a call still leaves a valid, named log. */
	raw_write_all(logfd, l.b, (size_t)(l.p - l.b));
	last_flush = start;
	return NULL;
}

/* reopen_log opens the log file again by name after the application
 * closed its descriptor, if the name still leads to the same file. */
static int reopen_log(void)
{
	const char *why;
	if (!logname[0])
		return 0;
	int dfd = open_logdir(&why);
	if (dfd < 0)
		return 0;
	int fd = (int)syscall(SYS_openat, dfd, logname, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	syscall(SYS_close, dfd);
	if (fd < 0)
		return 0;
	struct file_id id;
	if (file_id_of(fd, &id) != 0 || !same_file(&id, &log_id)) {
		syscall(SYS_close, fd);
		return 0;
	}
	use_log(fd, &id);
	return 1;
}

/* log_is_ours reports whether logfd still refers to the library's log
 * file. An application that closed it behind the library's back (glibc's
 * closefrom, the close_range or close system call made directly) may have
 * a file or socket of its own on that number now. */
static int log_is_ours(void)
{
	struct file_id id;
	return logfd >= 0 && file_id_of(logfd, &id) == 0 && same_file(&id, &log_id);
}

static void fd_cache_recheck(void);

/* log_ready makes logfd this process's log before a write: it never
 * writes into, nor closes, a descriptor that is not its file any more;
 * it reopens the log (the same file when it can, else a new one). Called
 * with mu held. */
static int log_ready(void)
{
	if (log_is_ours())
		return 1;
	if (logfd >= 0) {
		/* Closed behind our back: other descriptors may have been too. */
		logfd = -1;
		fd_cache_recheck();
	}
	if (!reopen_log())
		open_log(getppid());
	if (logfd < 0)
		return 0;
	log_reopens++;
	return 1;
}

static void flush_locked(void)
{
	if (blen == 0)
		return;
	if (log_ready())
		raw_write_all(logfd, buf, blen);
	else
		lost_records += count_lines(buf, blen);
	blen = 0;
}

/* log_release is called before the application closes descriptor fd or
 * puts another file on it: if it is the log, the log is flushed and let go
 * (the next flush reopens it). */
static void log_release(int fd)
{
	if (!enabled || fd < 0 || fd != logfd)
		return;
	pthread_mutex_lock(&mu);
	flush_locked();
	if (logfd == fd)
		logfd = -1;
	pthread_mutex_unlock(&mu);
}

/* buf_put appends n bytes to the shared buffer, writing it out whenever
 * it is full. Called with mu held. */
static void buf_put(const char *s, size_t n)
{
	while (n > 0) {
		if (blen == sizeof buf)
			flush_locked();
		size_t m = sizeof buf - blen < n ? sizeof buf - blen : n;
		memcpy(buf + blen, s, m);
		blen += m;
		s += m;
		n -= m;
	}
}

/* l_spill takes what does not fit in l->b: for a log's header, it writes
 * the line so far to the file; for a record, it takes mu (held until
 * emit), writes the buffer out first if the record may not fit in what is
 * left of it, and moves the line so far to the shared buffer. */
static __attribute__((noinline)) void l_spill(struct line *l, const char *s, size_t n)
{
	size_t have = (size_t)(l->p - l->b);
	l->p = l->b;
	if (l->sink >= 0) {
		raw_write_all(l->sink, l->b, have);
		raw_write_all(l->sink, s, n);
		return;
	}
	if (!l->locked) {
		pthread_mutex_lock(&mu);
		l->locked = 1;
		if (blen + have + n + sizeof l->b > sizeof buf)
			flush_locked();
	}
	buf_put(l->b, have);
	buf_put(s, n);
}

static void emit(struct line *l, unsigned long long ts)
{
	l_raw(l, "}\n", 2);
	size_t n = (size_t)(l->p - l->b);
	if (!l->locked) {
		pthread_mutex_lock(&mu);
		if (blen + n > sizeof buf)
			flush_locked();
	}
	buf_put(l->b, n);
	records++;
	if (flush_each || ts - last_flush > FLUSH_INTERVAL_NS) {
		flush_locked();
		last_flush = ts;
	}
	pthread_mutex_unlock(&mu);
}

static void flush_all(void)
{
	if (!enabled)
		return;
	pthread_mutex_lock(&mu);
	flush_locked();
	pthread_mutex_unlock(&mu);
}

/* ---- sockets and addresses --------------------------------------------- */

static enum sock_kind kind_of(int domain, int type)
{
	type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	switch (domain) {
	case AF_INET:
	case AF_INET6:
		if (type == SOCK_STREAM)
			return K_TCP;
		if (type == SOCK_DGRAM)
			return K_UDP;
		if (type == SOCK_RAW)
			return K_RAW;
		return K_OTHER;
	case AF_UNIX:
		if (type == SOCK_STREAM)
			return K_UNIX_STREAM;
		if (type == SOCK_DGRAM)
			return K_UNIX_DGRAM;
		if (type == SOCK_SEQPACKET)
			return K_UNIX_SEQPACKET;
		return K_OTHER;
	}
	return K_NONE;
}

static void set_fd(int fd, unsigned st)
{
	if (fd >= 0 && fd < FD_CACHE)
		__atomic_store_n(&fdstate[fd], (unsigned char)st, __ATOMIC_RELAXED);
}

static void set_sock(int fd, enum sock_kind k, int described)
{
	if (k == K_NONE)
		set_fd(fd, FD_KNOWN);
	else
		set_fd(fd, FD_KNOWN | FD_SOCK | (described ? FD_DESCRIBED : 0) | ((unsigned)k << FD_KIND_SHIFT));
}

/* fd_state returns the cache entry of fd, probing the descriptor the first
 * time. */
static unsigned fd_state(int fd)
{
	unsigned st = 0;
	if (fd < 0)
		return FD_KNOWN;
	if (fd < FD_CACHE) {
		st = __atomic_load_n(&fdstate[fd], __ATOMIC_RELAXED);
		if (st & FD_KNOWN)
			return st;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0)
		return FD_KNOWN; /* not cached: the fd may be opened later */
	enum sock_kind k = K_NONE;
	if (S_ISSOCK(sb.st_mode)) {
		int domain = 0, type = 0;
		socklen_t len = sizeof domain;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0) {
			len = sizeof type;
			if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0)
				k = kind_of(domain, type);
		}
	}
	set_sock(fd, k, 0);
	return k == K_NONE ? FD_KNOWN : (FD_KNOWN | FD_SOCK | ((unsigned)k << FD_KIND_SHIFT));
}

/* fd_cached is fd_state without probing: descriptors never seen are
 * reported as untraced (closing a socket the process never used needs no
 * record). */
static unsigned fd_cached(int fd)
{
	if (fd >= 0 && fd < FD_CACHE)
		return __atomic_load_n(&fdstate[fd], __ATOMIC_RELAXED);
	return fd_state(fd);
}

static inline int traced(unsigned st) { return (st & FD_SOCK) != 0; }
static inline enum sock_kind st_kind(unsigned st) { return (enum sock_kind)((st >> FD_KIND_SHIFT) & 7); }

static inline int is_dgram(enum sock_kind k) { return k == K_UDP || k == K_UNIX_DGRAM || k == K_RAW; }
static inline int is_unix(enum sock_kind k) { return k == K_UNIX_STREAM || k == K_UNIX_DGRAM || k == K_UNIX_SEQPACKET; }

/* fd_cache_recheck is called when descriptors were closed behind the
 * library's back: a socket's number may hold a file now, or another
 * socket. Entries of sockets are probed again (and kept when the number
 * is still a socket of the same kind); the others are forgotten and
 * probed on their next use. */
static void fd_cache_recheck(void)
{
	for (int fd = 0; fd < FD_CACHE; fd++) {
		unsigned st = fdstate[fd];
		if (!st)
			continue;
		set_fd(fd, 0);
		if (!traced(st))
			continue;
		unsigned now = fd_state(fd);
		if (traced(now) && st_kind(now) == st_kind(st))
			set_fd(fd, st);
	}
}

/* fmt_addr formats a socket address as wirepath writes endpoints:
 * "1.2.3.4:80", "[::1]:53" (IPv4-mapped IPv6 addresses as IPv4),
 * "unix:/path", "unix:@abstract" or "unix:" (unnamed). It returns the
 * length written (the name may hold NULs), 0 when there is no address. */
static size_t fmt_addr(const struct sockaddr *sa, socklen_t len, char *out, size_t n)
{
	if (!sa || len < sizeof(sa_family_t) || n < 64)
		return 0;
	char ip[INET6_ADDRSTRLEN];
	switch (sa->sa_family) {
	case AF_INET: {
		if (len < sizeof(struct sockaddr_in))
			return 0;
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
		return (size_t)snprintf(out, n, "%s:%u", ip, ntohs(in->sin_port));
	}
	case AF_INET6: {
		if (len < sizeof(struct sockaddr_in6))
			return 0;
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], ip, sizeof ip);
			return (size_t)snprintf(out, n, "%s:%u", ip, ntohs(in6->sin6_port));
		}
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
		return (size_t)snprintf(out, n, "[%s]:%u", ip, ntohs(in6->sin6_port));
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		size_t plen = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
		if (plen > sizeof un->sun_path)
			plen = sizeof un->sun_path;
		memcpy(out, "unix:", 5);
		size_t o = 5;
		if (plen == 0)
			return o;
		if (un->sun_path[0] == 0) { /* abstract: all plen bytes count */
			out[o++] = '@';
			for (size_t i = 1; i < plen && o < n - 1; i++)
				out[o++] = un->sun_path[i];
			return o;
		}
		for (size_t i = 0; i < plen && un->sun_path[i] && o < n - 1; i++)
			out[o++] = un->sun_path[i];
		return o;
	}
	}
	return (size_t)snprintf(out, n, "af%d:", sa->sa_family);
}

static void l_addr(struct line *l, const char *key, const struct sockaddr *sa, socklen_t len)
{
	char a[256];
	size_t n = fmt_addr(sa, len, a, sizeof a);
	if (n == 0)
		return;
	if (n >= sizeof a)
		n = sizeof a - 1;
	l_key(l, key);
	l_jstr(l, a, n);
}

/* l_describe writes the kind and both endpoints of fd (and the peer pid of
 * a UNIX socket) and marks the fd described. */
static void l_describe(struct line *l, int fd, enum sock_kind k)
{
	struct sockaddr_storage ss;
	socklen_t len;
	l_kstr(l, "sock", kind_names[k]);
	len = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		l_addr(l, "local", (struct sockaddr *)&ss, len);
	len = sizeof ss;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0)
		l_addr(l, "remote", (struct sockaddr *)&ss, len);
	if (is_unix(k)) {
		struct ucred cr;
		socklen_t cl = sizeof cr;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid > 0)
			l_kint(l, "peer_pid", cr.pid);
	}
	if (fd >= 0 && fd < FD_CACHE)
		__atomic_or_fetch(&fdstate[fd], (unsigned char)FD_DESCRIBED, __ATOMIC_RELAXED);
}

/* l_start writes the fields every record has. */
static void l_start(struct line *l, unsigned long long t0, unsigned long long t1, const char *call)
{
	l_init(l);
	l_str(l, "{\"ts\":");
	l_ll(l, (long long)t0);
	l_kint(l, "dur", (long long)(t1 - t0));
	l_kint(l, "tid", cur_tid());
	l_kstr(l, "call", call);
}

static void l_ret(struct line *l, long long ret, int err)
{
	l_kint(l, "ret", ret);
	if (ret < 0) {
		const char *name = strerrorname_np(err);
		if (name)
			l_kstr(l, "errno", name);
		else
			l_kint(l, "errno_num", err);
	}
}

/* ---- CRC-32 (IEEE 802.3, as Go's hash/crc32.ChecksumIEEE) -------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t crc_iov(const struct iovec *iov, size_t cnt, size_t n)
{
	uint32_t crc = 0;
	for (size_t i = 0; i < cnt && n > 0; i++) {
		size_t m = iov[i].iov_len < n ? iov[i].iov_len : n;
		crc = crc_update(crc, iov[i].iov_base, m);
		n -= m;
	}
	return crc;
}

static void l_sum(struct line *l, uint32_t crc)
{
	static const char hex[] = "0123456789abcdef";
	char s[8];
	for (int i = 0; i < 8; i++)
		s[i] = hex[(crc >> (28 - 4 * i)) & 15];
	l_key(l, "sum");
	l_raw(l, "\"", 1);
	l_raw(l, s, 8);
	l_raw(l, "\"", 1);
}

/* ---- the generic data-call logger --------------------------------------- */

struct data_call {
	const char *call;
	int fd;
	unsigned st;
	long long len;	/* bytes asked for */
	long long ret;	/* bytes moved or -1 */
	int err;
	int flags;	/* MSG_* flags */
	const struct sockaddr *addr; /* datagram peer (sendto/recvfrom/msg_name) */
	socklen_t alen;
	const struct iovec *iov; /* payload, for datagram checksums */
	size_t iovcnt;
	int in;		/* 1 for the recv family */
};

static int skip_error(long long ret, int err)
{
	if (ret >= 0)
		return 0;
	if ((err == EAGAIN || err == EWOULDBLOCK) && !log_eagain) {
		__atomic_add_fetch(&eagain_skipped, 1, __ATOMIC_RELAXED);
		return 1;
	}
	return 0;
}

static void log_data(const struct data_call *c, unsigned long long t0, unsigned long long t1)
{
	if (skip_error(c->ret, c->err))
		return;
	in_hook = 1;
	enum sock_kind k = st_kind(c->st);
	struct line l;
	l_start(&l, t0, t1, c->call);
	l_kint(&l, "fd", c->fd);
	l_kint(&l, "len", c->len);
	l_ret(&l, c->ret, c->err);
	if (c->in && (c->flags & MSG_PEEK))
		l_raw(&l, ",\"peek\":true", 12);
	if (!(c->st & FD_DESCRIBED))
		l_describe(&l, c->fd, k);
	if (c->addr && c->alen > 0)
		l_addr(&l, "peer", c->addr, c->alen);
	if (is_dgram(k) && c->ret >= 0 && c->iov) {
		size_t n = (size_t)c->ret;
		if (c->in && c->ret > c->len) { /* MSG_TRUNC: only what fitted */
			n = (size_t)c->len;
			l_raw(&l, ",\"trunc\":true", 13);
		}
		l_sum(&l, crc_iov(c->iov, c->iovcnt, n));
	}
	emit(&l, t1);
	in_hook = 0;
}

#define ACTIVE() (enabled && !in_hook)

/* ---- initialisation ---------------------------------------------------- */

static int ended; /* the end record was written */

static void atfork_prepare(void)
{
	if (!enabled)
		return;
	pthread_mutex_lock(&mu);
	flush_locked();
}

static void atfork_parent(void)
{
	if (!enabled)
		return;
	pthread_mutex_unlock(&mu);
}

static void atfork_child(void)
{
	if (!enabled)
		return;
	pthread_mutex_init(&mu, NULL);
	pid_t parent = mypid;
	mypid = getpid();
	my_tid = 0;
	blen = 0;
	records = 0;
	eagain_skipped = 0;
	write_errors = 0;
	lost_records = 0;
	log_reopens = 0;
	ended = 0;
	/* The parent's log fd is shared: the child gets a log of its own
	 * (and closes its copy of the parent's, if it is still that). */
	if (log_is_ours())
		syscall(SYS_close, logfd);
	logfd = -1;
	for (int i = 0; i < FD_CACHE; i++)
		fdstate[i] &= (unsigned char)~FD_DESCRIBED;
	open_log(parent);
}

static void resolve_all(void)
{
	RESOLVE(socket); RESOLVE(socketpair); RESOLVE(connect); RESOLVE(accept);
	RESOLVE(accept4); RESOLVE(bind); RESOLVE(listen); RESOLVE(send);
	RESOLVE(sendto); RESOLVE(sendmsg); RESOLVE(sendmmsg); RESOLVE(recv);
	RESOLVE(recvfrom); RESOLVE(recvmsg); RESOLVE(recvmmsg); RESOLVE(write);
	RESOLVE(read); RESOLVE(writev); RESOLVE(readv); RESOLVE(sendfile);
	RESOLVE(sendfile64); RESOLVE(splice); RESOLVE(__read_chk); RESOLVE(__recv_chk);
	RESOLVE(__recvfrom_chk); RESOLVE(close); RESOLVE(close_range); RESOLVE(closefrom);
	RESOLVE(shutdown); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3);
	RESOLVE(fcntl); RESOLVE(fcntl64);
	RESOLVE(fork); RESOLVE(execve); RESOLVE(execv); RESOLVE(execvp);
	RESOLVE(execvpe); RESOLVE(_exit); RESOLVE(_Exit);
}

/* say writes one line to standard error about why this process is not
 * traced, unless standard error is a socket (an inetd-style server's may
 * be its connection, and the library writes nothing into those). */
static void say(const char *what, const char *why)
{
	struct stat sb;
	if (fstat(2, &sb) != 0 || S_ISSOCK(sb.st_mode))
		return;
	char m[PATH_MAX + 256];
	int n = snprintf(m, sizeof m, "libwpcap: not tracing %s[%d]: %s: %s\n", program_invocation_short_name,
			 (int)getpid(), what, why);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof m) {
		n = (int)sizeof m - 1;
		m[n - 1] = '\n';
	}
	syscall(SYS_write, 2, m, (size_t)n);
}

/* logdir_init sets the log directory: WIREPATH_PRELOAD_DIR, else
 * $XDG_RUNTIME_DIR/wirepath-preload, else $XDG_CACHE_HOME/wirepath-preload,
 * else $HOME/.cache/wirepath-preload (XDG directories are taken only when
 * absolute). It creates the last level (mode 0700), and the cache directory
 * if missing; an existing directory is checked when the log is opened.
 * Returns NULL, or why there is no directory. */
static const char *logdir_init(void)
{
	const char *dir = getenv("WIREPATH_PRELOAD_DIR"), *base;
	char cwd[PATH_MAX];
	int n;
	if (dir && *dir == '/') {
		n = snprintf(logdir, sizeof logdir, "%s", dir);
	} else if (dir && *dir) { /* made absolute: the application may chdir */
		if (!getcwd(cwd, sizeof cwd))
			return "the current directory is unknown";
		n = snprintf(logdir, sizeof logdir, "%s/%s", cwd, dir);
	} else if ((base = getenv("XDG_RUNTIME_DIR")) && base[0] == '/') {
		n = snprintf(logdir, sizeof logdir, "%s/wirepath-preload", base);
	} else if ((base = getenv("XDG_CACHE_HOME")) && base[0] == '/') {
		mkdir(base, 0700);
		n = snprintf(logdir, sizeof logdir, "%s/wirepath-preload", base);
	} else if ((base = getenv("HOME")) && base[0] == '/') {
		n = snprintf(logdir, sizeof logdir, "%s/.cache", base);
		if (n > 0 && (size_t)n < sizeof logdir)
			mkdir(logdir, 0700);
		n = snprintf(logdir, sizeof logdir, "%s/.cache/wirepath-preload", base);
	} else {
		logdir[0] = 0;
		return "none of WIREPATH_PRELOAD_DIR, XDG_RUNTIME_DIR, XDG_CACHE_HOME and HOME is set";
	}
	if (n < 0 || (size_t)n >= sizeof logdir) {
		logdir[0] = 0;
		return "the directory's name is too long";
	}
	/* "dir/" would follow a symbolic link despite O_NOFOLLOW. */
	while (n > 1 && logdir[n - 1] == '/')
		logdir[--n] = 0;
	mkdir(logdir, 0700); /* one level; an existing directory is fine */
	return NULL;
}

/* host_init sets the host name the headers carry, whole, and the part of
 * it that goes into file names: at most FILE_HOST_MAX bytes, with '/' and
 * control characters made '_'. */
static int host_init(void)
{
	const char *h = getenv("WIREPATH_PRELOAD_HOST");
	if (h && *h) {
		size_t n = strlen(h);
		if (n > HOST_MAX) {
			say("WIREPATH_PRELOAD_HOST", "longer than 1024 bytes");
			return 0;
		}
		memcpy(hostname, h, n + 1);
	} else if (gethostname(hostname, sizeof hostname) != 0) {
		snprintf(hostname, sizeof hostname, "localhost");
	}
	hostname[sizeof hostname - 1] = 0;
	size_t i = 0;
	for (; hostname[i] && i < FILE_HOST_MAX; i++) {
		unsigned char c = (unsigned char)hostname[i];
		filehost[i] = c == '/' || c < 0x20 || c == 0x7f ? '_' : (char)c;
	}
	filehost[i] = 0;
	return 1;
}

__attribute__((constructor)) static void wpcap_init(void)
{
	resolve_all();
	crc_init();
	const char *why = logdir_init();
	if (why) {
		say(logdir[0] ? logdir : "trace directory", why);
		return;
	}
	if (!host_init())
		return;
	const char *f = getenv("WIREPATH_PRELOAD_FLUSH");
	flush_each = f && strcmp(f, "record") == 0;
	const char *e = getenv("WIREPATH_PRELOAD_EAGAIN");
	log_eagain = e && strcmp(e, "1") == 0;
	mypid = getpid();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if ((why = open_log(getppid())) != NULL) {
		say(logdir, why);
		return;
	}
	enabled = 1;
}

/* log_end writes the closing record with the counters. */
static void log_end(void)
{
	struct line l;
	unsigned long long t = now_ns();
	l_start(&l, t, t, "end");
	l_kint(&l, "records", (long long)records);
	l_kint(&l, "eagain_skipped", (long long)__atomic_load_n(&eagain_skipped, __ATOMIC_RELAXED));
	l_kint(&l, "write_errors", (long long)write_errors);
	l_kint(&l, "lost_records", (long long)lost_records);
	l_kint(&l, "log_reopens", (long long)log_reopens);
	emit(&l, t);
}

/* finish writes the end record once and flushes; later records (from other
 * destructors) are written at once. */
static void finish(void)
{
	if (!enabled)
		return;
	in_hook = 1;
	if (!__atomic_exchange_n(&ended, 1, __ATOMIC_RELAXED)) {
		flush_all(); /* first, so that the end record counts what this flush finds */
		log_end();
	}
	flush_each = 1;
	flush_all();
	in_hook = 0;
}

__attribute__((destructor)) static void wpcap_fini(void)
{
	finish();
}

/* ---- interposed functions: sockets -------------------------------------- */

EXPORT int socket(int domain, int type, int protocol)
{
	RESOLVE(socket);
	unsigned long long t0 = ACTIVE() ? now_ns() : 0;
	int r = REAL(socket)(domain, type, protocol);
	int e = errno;
	enum sock_kind k = kind_of(domain, type);
	if (r >= 0)
		set_sock(r, k, 0);
	if (ACTIVE() && k != K_NONE) {
		in_hook = 1;
		unsigned long long t = now_ns();
		struct line l;
		l_start(&l, t0 ? t0 : t, t, "socket");
		l_ret(&l, r, e);
		l_kstr(&l, "sock", kind_names[k]);
		emit(&l, t);
		in_hook = 0;
	}
	errno = e;
	return r;
}

EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	RESOLVE(socketpair);
	unsigned long long t0 = ACTIVE() ? now_ns() : 0;
	int r = REAL(socketpair)(domain, type, protocol, sv);
	int e = errno;
	enum sock_kind k = kind_of(domain, type);
	if (r == 0) {
		set_sock(sv[0], k, 0);
		set_sock(sv[1], k, 0);
	}
	if (ACTIVE() && k != K_NONE) {
		in_hook = 1;
		unsigned long long t = now_ns();
		struct line l;
		l_start(&l, t0 ? t0 : t, t, "socketpair");
		l_ret(&l, r, e);
		l_kstr(&l, "sock", kind_names[k]);
		if (r == 0) {
			l_kint(&l, "fd", sv[0]);
			l_kint(&l, "fd2", sv[1]);
			l_kint(&l, "peer_pid", mypid);
		}
		emit(&l, t);
		in_hook = 0;
	}
	errno = e;
	return r;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	RESOLVE(connect);
	unsigned st = ACTIVE() ? fd_state(fd) : 0;
	unsigned long long t0 = traced(st) ? now_ns() : 0;
	int r = REAL(connect)(fd, addr, alen);
	int e = errno;
	if (traced(st) && !skip_error(r, e)) {
		unsigned long long t1 = now_ns();
		in_hook = 1;
		struct line l;
		l_start(&l, t0, t1, "connect");
		l_kint(&l, "fd", fd);
		l_ret(&l, r, e);
		enum sock_kind k = st_kind(st);
		l_kstr(&l, "sock", kind_names[k]);
		if (r == 0 || e == EINPROGRESS) {
			/* The local name connect bound. */
			struct sockaddr_storage ss;
			socklen_t len = sizeof ss;
			if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
				l_addr(&l, "local", (struct sockaddr *)&ss, len);
			if (fd >= 0 && fd < FD_CACHE)
				__atomic_or_fetch(&fdstate[fd], (unsigned char)FD_DESCRIBED, __ATOMIC_RELAXED);
		}
		l_addr(&l, "remote", addr, alen);
		if (r == 0 && is_unix(k)) {
			struct ucred cr;
			socklen_t cl = sizeof cr;
			if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid > 0)
				l_kint(&l, "peer_pid", cr.pid);
		}
		emit(&l, t1);
		in_hook = 0;
	}
	errno = e;
	return r;
}

static int log_accept(const char *call, int lfd, int r, int e, unsigned long long t0)
{
	unsigned st = fd_state(lfd);
	enum sock_kind k = st_kind(st);
	if (r >= 0)
		set_sock(r, k, 0);
	if (!traced(st) || skip_error(r, e))
		return 0;
	unsigned long long t1 = now_ns();
	in_hook = 1;
	struct line l;
	l_start(&l, t0, t1, call);
	l_kint(&l, "fd", lfd);
	l_ret(&l, r, e);
	if (r >= 0)
		l_describe(&l, r, k); /* the peer name even when not asked for */
	emit(&l, t1);
	in_hook = 0;
	return 0;
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	RESOLVE(accept);
	int active = ACTIVE();
	unsigned long long t0 = active ? now_ns() : 0;
	int r = REAL(accept)(fd, addr, alen);
	int e = errno;
	if (active)
		log_accept("accept", fd, r, e, t0);
	else if (r >= 0)
		set_fd(r, 0);
	errno = e;
	return r;
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	RESOLVE(accept4);
	int active = ACTIVE();
	unsigned long long t0 = active ? now_ns() : 0;
	int r = REAL(accept4)(fd, addr, alen, flags);
	int e = errno;
	if (active)
		log_accept("accept4", fd, r, e, t0);
	else if (r >= 0)
		set_fd(r, 0);
	errno = e;
	return r;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t alen)
{
	RESOLVE(bind);
	int r = REAL(bind)(fd, addr, alen);
	int e = errno;
	unsigned st;
	if (ACTIVE() && traced(st = fd_state(fd))) {
		in_hook = 1;
		unsigned long long t = now_ns();
		struct line l;
		l_start(&l, t, t, "bind");
		l_kint(&l, "fd", fd);
		l_ret(&l, r, e);
		l_kstr(&l, "sock", kind_names[st_kind(st)]);
		struct sockaddr_storage ss;
		socklen_t len = sizeof ss;
		if (r == 0 && getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
			l_addr(&l, "local", (struct sockaddr *)&ss, len); /* port 0 resolved */
		else
			l_addr(&l, "local", addr, alen);
		emit(&l, t);
		in_hook = 0;
	}
	errno = e;
	return r;
}

EXPORT int listen(int fd, int backlog)
{
	RESOLVE(listen);
	int r = REAL(listen)(fd, backlog);
	int e = errno;
	unsigned st;
	if (ACTIVE() && traced(st = fd_state(fd))) {
		in_hook = 1;
		unsigned long long t = now_ns();
		struct line l;
		l_start(&l, t, t, "listen");
		l_kint(&l, "fd", fd);
		l_ret(&l, r, e);
		l_kstr(&l, "sock", kind_names[st_kind(st)]);
		/* The port a listen without bind was given. */
		struct sockaddr_storage ss;
		socklen_t len = sizeof ss;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
			l_addr(&l, "local", (struct sockaddr *)&ss, len);
		emit(&l, t);
		in_hook = 0;
	}
	errno = e;
	return r;
}

/* ---- interposed functions: data ----------------------------------------- */

/* DATA_PRE decides whether the call on fd is traced and takes its start
 * time; DATA_POST logs it. */
#define DATA_PRE(fd)                                           \
	unsigned st_ = ACTIVE() ? fd_state(fd) : 0;            \
	unsigned long long t0_ = traced(st_) ? now_ns() : 0

/* data_done logs a data call on a traced descriptor; it must be called
 * right after the real call, whose errno it keeps. */
static void data_done(const char *call, int fd, unsigned st, long long len, long long r, int flags,
		      const struct sockaddr *addr, socklen_t alen, const struct iovec *iov, size_t iovcnt, int in,
		      unsigned long long t0)
{
	int e = errno;
	struct data_call c = {call, fd, st, len, r, e, flags, addr, alen, iov, iovcnt, in};
	log_data(&c, t0, now_ns());
	errno = e;
}

/* BUF_DONE is data_done for calls on one buffer b of n bytes. */
#define BUF_DONE(call, fd, b, n, r, flags, in)                                                        \
	do {                                                                                          \
		if (traced(st_)) {                                                                    \
			struct iovec iov_ = {(void *)(b), (n)};                                       \
			data_done(call, fd, st_, (long long)(n), r, flags, NULL, 0, &iov_, 1, in, t0_); \
		}                                                                                     \
	} while (0)

EXPORT ssize_t send(int fd, const void *b, size_t n, int flags)
{
	RESOLVE(send);
	DATA_PRE(fd);
	ssize_t r = REAL(send)(fd, b, n, flags);
	BUF_DONE("send", fd, b, n, r, flags, 0);
	return r;
}

EXPORT ssize_t sendto(int fd, const void *b, size_t n, int flags, const struct sockaddr *addr, socklen_t alen)
{
	RESOLVE(sendto);
	DATA_PRE(fd);
	ssize_t r = REAL(sendto)(fd, b, n, flags, addr, alen);
	if (traced(st_)) {
		int e = errno;
		struct iovec iov = {(void *)b, n};
		struct data_call c = {"sendto", fd, st_, (long long)n, r, e, flags, addr, alen, &iov, 1, 0};
		log_data(&c, t0_, now_ns());
		errno = e;
	}
	return r;
}

static long long iov_len(const struct iovec *iov, size_t cnt)
{
	long long n = 0;
	for (size_t i = 0; i < cnt; i++)
		n += (long long)iov[i].iov_len;
	return n;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	RESOLVE(sendmsg);
	DATA_PRE(fd);
	ssize_t r = REAL(sendmsg)(fd, msg, flags);
	if (traced(st_)) {
		int e = errno;
		struct data_call c = {"sendmsg", fd, st_, iov_len(msg->msg_iov, msg->msg_iovlen), r, e, flags,
				      msg->msg_name, msg->msg_namelen, msg->msg_iov, msg->msg_iovlen, 0};
		log_data(&c, t0_, now_ns());
		errno = e;
	}
	return r;
}

EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int vlen, int flags)
{
	RESOLVE(sendmmsg);
	DATA_PRE(fd);
	int r = REAL(sendmmsg)(fd, v, vlen, flags);
	if (traced(st_)) {
		int e = errno;
		unsigned long long t1 = now_ns();
		if (r < 0) {
			struct data_call c = {"sendmmsg", fd, st_, 0, r, e, flags, NULL, 0, NULL, 0, 0};
			log_data(&c, t0_, t1);
		}
		for (int i = 0; i < r; i++) {
			struct msghdr *m = &v[i].msg_hdr;
			struct data_call c = {"sendmmsg", fd, st_, iov_len(m->msg_iov, m->msg_iovlen), v[i].msg_len, 0, flags,
					      m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, 0};
			log_data(&c, t0_, t1);
			st_ |= FD_DESCRIBED;
		}
		errno = e;
	}
	return r;
}

EXPORT ssize_t recv(int fd, void *b, size_t n, int flags)
{
	RESOLVE(recv);
	DATA_PRE(fd);
	ssize_t r = REAL(recv)(fd, b, n, flags);
	BUF_DONE("recv", fd, b, n, r, flags, 1);
	return r;
}

EXPORT ssize_t __recv_chk(int fd, void *b, size_t n, size_t buflen, int flags)
{
	RESOLVE(__recv_chk);
	DATA_PRE(fd);
	ssize_t r = REAL(__recv_chk)(fd, b, n, buflen, flags);
	BUF_DONE("recv", fd, b, n, r, flags, 1);
	return r;
}

static ssize_t do_recvfrom(const char *name, ssize_t (*fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *),
			   int fd, void *b, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	DATA_PRE(fd);
	/* Ask for the sender even when the caller does not. */
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct sockaddr *a = addr;
	socklen_t *al = alen;
	if (traced(st_) && !addr) {
		a = (struct sockaddr *)&ss;
		al = &sl;
	}
	socklen_t given = alen ? *alen : 0;
	ssize_t r = fn(fd, b, n, flags, a, al);
	if (traced(st_)) {
		int e = errno;
		socklen_t got = al ? *al : 0;
		if (a == addr && got > given)
			got = 0; /* the caller's buffer was too small: not all of it is there */
		struct iovec iov = {b, n};
		struct data_call c = {name, fd, st_, (long long)n, r, e, flags, r >= 0 ? a : NULL, got, &iov, 1, 1};
		log_data(&c, t0_, now_ns());
		errno = e;
	}
	return r;
}

EXPORT ssize_t recvfrom(int fd, void *b, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	RESOLVE(recvfrom);
	return do_recvfrom("recvfrom", REAL(recvfrom), fd, b, n, flags, addr, alen);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *b, size_t n, size_t buflen, int flags, struct sockaddr *addr, socklen_t *alen)
{
	RESOLVE(__recvfrom_chk);
	if (buflen < n) /* let the real function report the overflow */
		return REAL(__recvfrom_chk)(fd, b, n, buflen, flags, addr, alen);
	RESOLVE(recvfrom);
	return do_recvfrom("recvfrom", REAL(recvfrom), fd, b, n, flags, addr, alen);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	RESOLVE(recvmsg);
	DATA_PRE(fd);
	if (!traced(st_))
		return REAL(recvmsg)(fd, msg, flags);
	/* Ask for the sender even when the caller does not. */
	struct sockaddr_storage ss;
	struct msghdr m = *msg;
	socklen_t given = msg->msg_namelen;
	if (!m.msg_name) {
		m.msg_name = &ss;
		m.msg_namelen = sizeof ss;
	}
	ssize_t r = REAL(recvmsg)(fd, &m, flags);
	int e = errno;
	msg->msg_controllen = m.msg_controllen;
	msg->msg_flags = m.msg_flags;
	if (msg->msg_name)
		msg->msg_namelen = m.msg_namelen;
	socklen_t got = m.msg_namelen;
	if (msg->msg_name && got > given)
		got = 0;
	struct data_call c = {"recvmsg", fd, st_, iov_len(m.msg_iov, m.msg_iovlen), r, e, flags,
			      r >= 0 ? m.msg_name : NULL, r >= 0 ? got : 0, m.msg_iov, m.msg_iovlen, 1};
	log_data(&c, t0_, now_ns());
	errno = e;
	return r;
}

#define MMSG_NAMES 64

EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned int vlen, int flags, struct timespec *tmo)
{
	RESOLVE(recvmmsg);
	DATA_PRE(fd);
	if (!traced(st_))
		return REAL(recvmmsg)(fd, v, vlen, flags, tmo);
	/* Ask for the senders the caller does not ask for (the first 64). */
	struct sockaddr_storage ss[MMSG_NAMES];
	unsigned char ours[MMSG_NAMES];
	for (unsigned int i = 0; i < vlen && i < MMSG_NAMES; i++) {
		ours[i] = v[i].msg_hdr.msg_name == NULL;
		if (ours[i]) {
			v[i].msg_hdr.msg_name = &ss[i];
			v[i].msg_hdr.msg_namelen = sizeof ss[i];
		}
	}
	int r = REAL(recvmmsg)(fd, v, vlen, flags, tmo);
	int e = errno;
	unsigned long long t1 = now_ns();
	if (r < 0) {
		struct data_call c = {"recvmmsg", fd, st_, 0, r, e, flags, NULL, 0, NULL, 0, 1};
		log_data(&c, t0_, t1);
	}
	for (int i = 0; i < r; i++) {
		struct msghdr *m = &v[i].msg_hdr;
		struct data_call c = {"recvmmsg", fd, st_, iov_len(m->msg_iov, m->msg_iovlen), v[i].msg_len, 0, flags,
				      m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, 1};
		log_data(&c, t0_, t1);
		st_ |= FD_DESCRIBED;
	}
	for (unsigned int i = 0; i < vlen && i < MMSG_NAMES; i++) {
		if (ours[i]) {
			v[i].msg_hdr.msg_name = NULL;
			v[i].msg_hdr.msg_namelen = 0;
		}
	}
	errno = e;
	return r;
}

EXPORT ssize_t write(int fd, const void *b, size_t n)
{
	RESOLVE(write);
	DATA_PRE(fd);
	ssize_t r = REAL(write)(fd, b, n);
	BUF_DONE("write", fd, b, n, r, 0, 0);
	return r;
}

EXPORT ssize_t read(int fd, void *b, size_t n)
{
	RESOLVE(read);
	DATA_PRE(fd);
	ssize_t r = REAL(read)(fd, b, n);
	BUF_DONE("read", fd, b, n, r, 0, 1);
	return r;
}

EXPORT ssize_t __read_chk(int fd, void *b, size_t n, size_t buflen)
{
	RESOLVE(__read_chk);
	DATA_PRE(fd);
	ssize_t r = REAL(__read_chk)(fd, b, n, buflen);
	BUF_DONE("read", fd, b, n, r, 0, 1);
	return r;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	RESOLVE(writev);
	DATA_PRE(fd);
	ssize_t r = REAL(writev)(fd, iov, cnt);
	if (traced(st_)) {
		size_t c_ = cnt > 0 ? (size_t)cnt : 0;
		data_done("writev", fd, st_, iov_len(iov, c_), r, 0, NULL, 0, iov, c_, 0, t0_);
	}
	return r;
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	RESOLVE(readv);
	DATA_PRE(fd);
	ssize_t r = REAL(readv)(fd, iov, cnt);
	if (traced(st_)) {
		size_t c_ = cnt > 0 ? (size_t)cnt : 0;
		data_done("readv", fd, st_, iov_len(iov, c_), r, 0, NULL, 0, iov, c_, 1, t0_);
	}
	return r;
}

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	RESOLVE(sendfile);
	DATA_PRE(out);
	ssize_t r = REAL(sendfile)(out, in, off, n);
	if (traced(st_))
		data_done("sendfile", out, st_, (long long)n, r, 0, NULL, 0, NULL, 0, 0, t0_);
	return r;
}

EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
	RESOLVE(sendfile64);
	DATA_PRE(out);
	ssize_t r = REAL(sendfile64)(out, in, off, n);
	if (traced(st_))
		data_done("sendfile", out, st_, (long long)n, r, 0, NULL, 0, NULL, 0, 0, t0_);
	return r;
}

/* splice moves data between a pipe and another descriptor inside the
 * kernel (proxies forward between sockets through a pipe with it): into a
 * traced socket it is a send, out of one a receive (one end is always a
 * pipe). vmsplice and tee touch only pipes; sendfile's source and
 * copy_file_range's descriptors cannot be sockets. */
EXPORT ssize_t splice(int in, off64_t *inoff, int out, off64_t *outoff, size_t n, unsigned int flags)
{
	RESOLVE(splice);
	unsigned so = ACTIVE() ? fd_state(out) : 0;
	unsigned si = ACTIVE() && !traced(so) ? fd_state(in) : 0;
	unsigned long long t0 = traced(so) || traced(si) ? now_ns() : 0;
	ssize_t r = REAL(splice)(in, inoff, out, outoff, n, flags);
	if (traced(so))
		data_done("splice_send", out, so, (long long)n, r, 0, NULL, 0, NULL, 0, 0, t0);
	else if (traced(si))
		data_done("splice_recv", in, si, (long long)n, r, 0, NULL, 0, NULL, 0, 1, t0);
	return r;
}

/* ---- interposed functions: descriptors and processes --------------------- */

/* log_fd_call logs a call on a descriptor entered at t0 (0: at its
 * return). Calls that end a descriptor (close, shutdown) pass the time
 * they were entered: another thread may reuse the number as soon as the
 * kernel freed it, and the reader orders a close before a reuse by it. */
static void log_fd_call(const char *call, int fd, long long r, int e, const char *k2, long long v2, unsigned long long t0)
{
	in_hook = 1;
	unsigned long long t = now_ns();
	struct line l;
	l_start(&l, t0 ? t0 : t, t, call);
	l_kint(&l, "fd", fd);
	l_ret(&l, r, e);
	if (k2)
		l_kint(&l, k2, v2);
	emit(&l, t);
	in_hook = 0;
}

EXPORT int close(int fd)
{
	RESOLVE(close);
	unsigned st = ACTIVE() ? fd_cached(fd) : 0;
	/* The application closes our log (daemons close every fd): flush,
	 * let it go, and reopen it on the next flush. */
	log_release(fd);
	unsigned long long t0 = traced(st) ? now_ns() : 0;
	int r = REAL(close)(fd);
	int e = errno;
	set_fd(fd, 0);
	if (traced(st))
		log_fd_call("close", fd, r, e, NULL, 0, t0);
	errno = e;
	return r;
}

/* before_close_range lets the log go if the application is closing the
 * descriptors lo to hi and the log is among them. */
static void before_close_range(unsigned int lo, unsigned int hi)
{
	int fd = logfd;
	if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi)
		log_release(fd);
}

/* after_close_range forgets the descriptors lo to hi, logging the close of
 * the traced sockets among them, entered at t0. */
static void after_close_range(unsigned int lo, unsigned int hi, unsigned long long t0)
{
	for (unsigned int fd = lo; fd <= hi && fd < FD_CACHE; fd++) {
		if (ACTIVE() && traced(fdstate[fd]))
			log_fd_call("close", (int)fd, 0, 0, NULL, 0, t0);
		set_fd((int)fd, 0);
	}
}

EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
	RESOLVE(close_range);
	if (flags & CLOSE_RANGE_CLOEXEC) /* nothing is closed now (the log is close-on-exec already) */
		return REAL(close_range)(lo, hi, flags);
	before_close_range(lo, hi);
	unsigned long long t0 = now_ns();
	int r = REAL(close_range)(lo, hi, flags);
	int e = errno;
	if (r == 0)
		after_close_range(lo, hi, t0);
	errno = e;
	return r;
}

/* glibc's closefrom makes the close_range system call itself, without
 * going through the interposed close_range. */
EXPORT void closefrom(int lowfd)
{
	RESOLVE(closefrom);
	unsigned int lo = lowfd < 0 ? 0 : (unsigned int)lowfd;
	before_close_range(lo, ~0U);
	int e = errno;
	unsigned long long t0 = now_ns();
	REAL(closefrom)(lowfd);
	after_close_range(lo, ~0U, t0);
	errno = e;
}

EXPORT int shutdown(int fd, int how)
{
	RESOLVE(shutdown);
	unsigned st = ACTIVE() ? fd_state(fd) : 0;
	unsigned long long t0 = traced(st) ? now_ns() : 0;
	int r = REAL(shutdown)(fd, how);
	int e = errno;
	if (traced(st))
		log_fd_call("shutdown", fd, r, e, "how", how, t0);
	errno = e;
	return r;
}

static int after_dup(const char *call, int oldfd, int newfd_before, int r, int e)
{
	unsigned st = ACTIVE() ? fd_state(oldfd) : 0;
	unsigned old_new = newfd_before >= 0 && ACTIVE() ? fd_state(newfd_before) : 0;
	if (r >= 0) {
		/* The new fd is what the old one is; it is described by this record. */
		set_fd(r, st & (FD_KNOWN | FD_SOCK | (7u << FD_KIND_SHIFT) | FD_DESCRIBED));
		if (!(st & FD_KNOWN))
			set_fd(r, 0);
	}
	if (traced(st) || traced(old_new))
		log_fd_call(call, oldfd, r, e, NULL, 0, 0);
	return r;
}

EXPORT int dup(int fd)
{
	RESOLVE(dup);
	int r = REAL(dup)(fd);
	int e = errno;
	after_dup("dup", fd, -1, r, e);
	errno = e;
	return r;
}

EXPORT int dup2(int fd, int fd2)
{
	RESOLVE(dup2);
	unsigned before = ACTIVE() ? fd_cached(fd2) : 0;
	if (fd != fd2)
		log_release(fd2);
	int r = REAL(dup2)(fd, fd2);
	int e = errno;
	if (r >= 0 && fd != fd2)
		set_fd(fd2, 0);
	unsigned st = ACTIVE() ? fd_state(fd) : 0;
	if (r >= 0 && fd != fd2)
		set_fd(fd2, st);
	if ((traced(st) || traced(before)) && ACTIVE())
		log_fd_call("dup2", fd, r, e, NULL, 0, 0);
	errno = e;
	return r;
}

EXPORT int dup3(int fd, int fd2, int flags)
{
	RESOLVE(dup3);
	unsigned before = ACTIVE() ? fd_cached(fd2) : 0;
	if (fd != fd2)
		log_release(fd2);
	int r = REAL(dup3)(fd, fd2, flags);
	int e = errno;
	if (r >= 0)
		set_fd(fd2, 0);
	unsigned st = ACTIVE() ? fd_state(fd) : 0;
	if (r >= 0)
		set_fd(fd2, st);
	if ((traced(st) || traced(before)) && ACTIVE())
		log_fd_call("dup3", fd, r, e, NULL, 0, 0);
	errno = e;
	return r;
}

/* fcntl is interposed for F_DUPFD and F_DUPFD_CLOEXEC only (Python's
 * os.dup uses it); every other command passes straight through. The
 * argument is read as a pointer, as glibc does, which carries an int too. */
static int do_fcntl(int (*fn)(int, int, ...), int fd, int cmd, void *arg)
{
	int r = fn(fd, cmd, arg);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
		int e = errno;
		after_dup("dup", fd, -1, r, e);
		errno = e;
	}
	return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	RESOLVE(fcntl);
	return do_fcntl(REAL(fcntl), fd, cmd, arg);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	RESOLVE(fcntl64);
	if (!REAL(fcntl64)) {
		RESOLVE(fcntl);
		return do_fcntl(REAL(fcntl), fd, cmd, arg);
	}
	return do_fcntl(REAL(fcntl64), fd, cmd, arg);
}

EXPORT pid_t fork(void)
{
	RESOLVE(fork);
	unsigned long long t0 = now_ns();
	pid_t r = REAL(fork)();
	int e = errno;
	if (r != 0 && ACTIVE()) { /* the parent; the child's header names it */
		in_hook = 1;
		unsigned long long t1 = now_ns();
		struct line l;
		l_start(&l, t0, t1, "fork");
		l_ret(&l, r, e);
		emit(&l, t1);
		in_hook = 0;
	}
	errno = e;
	return r;
}

/* vfork is run as fork: the child must not share our buffer. */
EXPORT pid_t vfork(void)
{
	return fork();
}

static void before_exec(const char *path)
{
	if (!ACTIVE())
		return;
	in_hook = 1;
	unsigned long long t = now_ns();
	struct line l;
	l_start(&l, t, t, "exec");
	/* The kernel refuses paths of PATH_MAX bytes or more (ENAMETOOLONG,
	 * in the exec record that follows): no more is written. */
	l_key(&l, "path");
	l_jstr(&l, path ? path : "", path ? strnlen(path, PATH_MAX) : 0);
	emit(&l, t);
	flush_all();
	in_hook = 0;
}

static void exec_failed(int e)
{
	if (!ACTIVE())
		return;
	in_hook = 1;
	unsigned long long t = now_ns();
	struct line l;
	l_start(&l, t, t, "exec");
	l_ret(&l, -1, e);
	emit(&l, t);
	in_hook = 0;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	RESOLVE(execve);
	before_exec(path);
	int r = REAL(execve)(path, argv, envp);
	int e = errno;
	exec_failed(e);
	errno = e;
	return r;
}

EXPORT int execv(const char *path, char *const argv[])
{
	RESOLVE(execv);
	before_exec(path);
	int r = REAL(execv)(path, argv);
	int e = errno;
	exec_failed(e);
	errno = e;
	return r;
}

EXPORT int execvp(const char *file, char *const argv[])
{
	RESOLVE(execvp);
	before_exec(file);
	int r = REAL(execvp)(file, argv);
	int e = errno;
	exec_failed(e);
	errno = e;
	return r;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	RESOLVE(execvpe);
	before_exec(file);
	int r = REAL(execvpe)(file, argv, envp);
	int e = errno;
	exec_failed(e);
	errno = e;
	return r;
}

#define MAX_EXEC_ARGS 4096

/* collect_args gathers the variadic arguments of the execl family. */
#define COLLECT_ARGS(arg0, ap, argv)                                  \
	do {                                                          \
		size_t n_ = 0;                                        \
		argv[n_++] = (char *)(arg0);                          \
		while (argv[n_ - 1] && n_ < MAX_EXEC_ARGS)            \
			argv[n_++] = va_arg(ap, char *);              \
		argv[MAX_EXEC_ARGS - 1] = NULL;                       \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[MAX_EXEC_ARGS];
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[MAX_EXEC_ARGS];
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[MAX_EXEC_ARGS];
	char **envp = NULL;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **);
	va_end(ap);
	return execve(path, argv, envp);
}

EXPORT void _exit(int status)
{
	RESOLVE(_exit);
	finish();
	REAL(_exit)(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	RESOLVE(_Exit);
	finish();
	REAL(_Exit)(status);
	__builtin_unreachable();
}
