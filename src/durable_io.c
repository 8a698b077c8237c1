/*-------------------------------------------------------------------------
 *
 * durable_io.c
 *	  Syncing pg_fastckpt's own files without PostgreSQL's PANIC.
 *
 * PostgreSQL PANICs when the sync of one of its files fails
 * (data_sync_retry = off): the kernel may have dropped the pages it could
 * not write, and a later sync that succeeds would call durable what never
 * reached the disk.  pg_fastckpt never relies on such a later sync.  The
 * log writer writes the bytes not yet durable again from its buffer; a
 * checkpoint that fails is written again from the start; a directory
 * entry whose sync failed is made again (or, for a removal, made again by
 * the next removal) before it counts.  So these failures are errors that
 * leave the server up, and the routines here report them to their caller
 * instead of PANICking as fsync_fname and pg_flush_data do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"

#include "pg_fastckpt.h"

/*
 * Sync a directory, so that the entries made or removed in it last.
 * Returns 0, or -1 with errno set.  Like fsync_fname, treats a system
 * that cannot sync directories (EBADF, EINVAL) as success.
 */
int
fc_fsync_dir(const char *path)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	int			rc;
	int			save_errno;

	if (fd < 0)
		return -1;
	rc = pg_fsync(fd);
	save_errno = errno;
	(void) CloseTransientFile(fd);
	if (rc != 0 && (save_errno == EBADF || save_errno == EINVAL))
		rc = 0;
	errno = save_errno;
	return rc == 0 ? 0 : -1;
}

/* The same, raising an ERROR on failure. */
void
fc_fsync_dir_or_error(const char *path)
{
	if (fc_fsync_dir(path) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", path)));
}

/*
 * Start write-back of a range, so that the sync that follows finds little
 * to do.  Errors are left to that sync: asking only to start write-back
 * leaves a write-back error recorded on the file for the next fsync or
 * fdatasync to report (Linux consumes it only in a wait).  Nothing with
 * fsync = off, as pg_flush_data.
 */
void
fc_start_writeback(int fd, off_t offset, off_t nbytes)
{
	if (!enableFsync)
		return;
#ifdef SYNC_FILE_RANGE_WRITE
	(void) sync_file_range(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE);
#endif
}
