/*
 * io_fault.c: an LD_PRELOAD library for TAP test 025 that makes syncs of
 * pg_fastckpt's files fail with EIO, as a failing device would.
 *
 * The server is started with LD_PRELOAD set to this library and
 * FC_IO_FAULT_DIR naming a directory.  Each fault is a file there, present
 * while it is on:
 *	 ckpt_writeback	 sync_file_range of a file under pg_fastckpt/ckpt/
 *	 ckpt_dir_fsync	 fsync of a directory under pg_fastckpt/ckpt/
 *	 log_dir_fsync	 fsync of the directory pg_fastckpt/log
 * Every call failed appends the fault's name to the file "hits" there, so
 * that the test can show the fault was met.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int	(*real_fsync) (int);
static int	(*real_sync_file_range) (int, off64_t, off64_t, unsigned int);

/* The path fd refers to, into buf; false if unknown. */
static int
fd_path(int fd, char *buf, size_t len)
{
	char		link[64];
	ssize_t		n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, len - 1);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return 1;
}

/* Is the fault named on?  If so, note the hit. */
static int
fault_on(const char *name)
{
	const char *dir = getenv("FC_IO_FAULT_DIR");
	char		path[4096];
	FILE	   *hits;

	if (dir == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (access(path, F_OK) != 0)
		return 0;
	snprintf(path, sizeof(path), "%s/hits", dir);
	hits = fopen(path, "a");
	if (hits != NULL)
	{
		fprintf(hits, "%s\n", name);
		fclose(hits);
	}
	return 1;
}

static int
is_dir(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

int
fsync(int fd)
{
	char		path[4096];

	if (real_fsync == NULL)
		real_fsync = dlsym(RTLD_NEXT, "fsync");
	if (is_dir(fd) && fd_path(fd, path, sizeof(path)))
	{
		const char *log = strstr(path, "/pg_fastckpt/log");
		const char *ckpt = strstr(path, "/pg_fastckpt/ckpt");

		if ((log != NULL && log[strlen("/pg_fastckpt/log")] == '\0' &&
			 fault_on("log_dir_fsync")) ||
			(ckpt != NULL && fault_on("ckpt_dir_fsync")))
		{
			errno = EIO;
			return -1;
		}
	}
	return real_fsync(fd);
}

int
sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags)
{
	char		path[4096];

	if (real_sync_file_range == NULL)
		real_sync_file_range = dlsym(RTLD_NEXT, "sync_file_range");
	if (fd_path(fd, path, sizeof(path)) && strstr(path, "/pg_fastckpt/ckpt/") != NULL &&
		fault_on("ckpt_writeback"))
	{
		errno = EIO;
		return -1;
	}
	return real_sync_file_range(fd, offset, nbytes, flags);
}
