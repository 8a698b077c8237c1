/*-------------------------------------------------------------------------
 *
 * log_segment.c
 *	  Log segment files under $PGDATA/pg_fastckpt/log, and reading the log
 *	  back at recovery.
 *
 * A segment is named by the log position it starts at (16 hex digits) and
 * holds FC_LOG_SEGMENT_SIZE bytes of the stream; a record may continue in
 * the next segment.  The reader (core/log_stream.c, shared with the offline
 * verifier) stops at the first record that does not validate (torn, zeroed,
 * stale or corrupt): everything after it is the unacknowledged tail of a
 * crash.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "core/file_layout.h"
#include "core/log_stream.h"
#include "log/log.h"
#include "pg_fastckpt.h"

static int	fc_trace_fd = -1;

void
fc_log_dir_ensure(void)
{
	if (MakePGDirectory(FC_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", FC_DIR)));
	if (MakePGDirectory(FC_LOG_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", FC_LOG_DIR)));
}

char *
fc_log_segment_path(uint64 segstart)
{
	return psprintf(FC_LOG_DIR "/" FC_HEX_NAME_FMT, (unsigned long long) segstart);
}

/*
 * Was nothing ever written to this segment?  The writer fills a segment
 * from its start, so a zeroed first page says so.  False if it cannot be
 * read.
 */
bool
fc_log_segment_blank(uint64 segstart)
{
	char	   *path = fc_log_segment_path(segstart);
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	char		page[8192];
	ssize_t		got;
	bool		blank;

	pfree(path);
	if (fd < 0)
		return false;
	got = read(fd, page, sizeof(page));
	CloseTransientFile(fd);
	if (got <= 0)
		return got == 0;
	blank = true;
	for (ssize_t i = 0; i < got && blank; i++)
		blank = (page[i] == 0);
	return blank;
}

/* Start positions of the segment files, ascending. */
static List *
fc_log_list_segments(void)
{
	List	   *segs = NIL;
	DIR		   *dir;
	struct dirent *de;

	dir = AllocateDir(FC_LOG_DIR);
	while ((de = ReadDir(dir, FC_LOG_DIR)) != NULL)
	{
		char	   *endp;
		unsigned long long start;
		uint64	   *item;
		ListCell   *lc;
		int			pos = 0;

		if (!fc_is_hex_name(de->d_name))
			continue;
		start = strtoull(de->d_name, &endp, 16);
		if (start % FC_LOG_SEGMENT_SIZE != 0)
			continue;
		item = palloc(sizeof(uint64));
		*item = start;
		foreach(lc, segs)
		{
			if (*(uint64 *) lfirst(lc) > start)
				break;
			pos++;
		}
		segs = list_insert_nth(segs, pos, item);
	}
	FreeDir(dir);
	return segs;
}

/* Where the oldest segment starts (0 with no log at all). */
uint64
fc_log_first_lsn(void)
{
	List	   *segs = fc_log_list_segments();
	uint64		first = 0;

	if (segs != NIL)
		first = *(uint64 *) linitial(segs);
	list_free_deep(segs);
	return first;
}

/*
 * Remove the segments that hold nothing at or after lsn: a checkpoint
 * installed later no longer needs them.  Returns how many went.
 */
uint64
fc_log_remove_before(uint64 lsn)
{
	List	   *segs = fc_log_list_segments();
	ListCell   *lc;
	uint64		removed = 0;

	foreach(lc, segs)
	{
		uint64		start = *(uint64 *) lfirst(lc);
		char	   *path;

		if (start + FC_LOG_SEGMENT_SIZE > lsn)
			break;
		path = fc_log_segment_path(start);
		if (unlink(path) != 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove fastckpt log segment \"%s\": %m", path)));
		else
			removed++;
		pfree(path);
	}
	list_free_deep(segs);
	/* should the removals not last, the next removal makes them again */
	if (removed > 0 && fc_fsync_dir(FC_LOG_DIR) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", FC_LOG_DIR)));
	return removed;
}

/* Segments the log writer was still zero-filling when the server stopped. */
static void
fc_log_remove_temp_files(void)
{
	DIR		   *dir = AllocateDir(FC_LOG_DIR);
	struct dirent *de;

	while ((de = ReadDir(dir, FC_LOG_DIR)) != NULL)
	{
		size_t		len = strlen(de->d_name);

		if (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0)
		{
			char	   *path = psprintf(FC_LOG_DIR "/%s", de->d_name);

			(void) unlink(path);
			pfree(path);
		}
	}
	FreeDir(dir);
}

/*
 * Cut the log at end_lsn, where recovery found its last valid record, so
 * that new records never sit in front of stale bytes of a torn tail: zero
 * the rest of its segment (segments keep their full size) and remove the
 * segments after it, and half-made ones.
 */
void
fc_log_truncate_at(uint64 end_lsn)
{
	List	   *segs = fc_log_list_segments();
	ListCell   *lc;

	foreach(lc, segs)
	{
		uint64		start = *(uint64 *) lfirst(lc);
		char	   *path = fc_log_segment_path(start);
		struct stat st;

		if (start >= end_lsn && !(start == end_lsn && end_lsn % FC_LOG_SEGMENT_SIZE != 0))
		{
			if (unlink(path) < 0 && errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not remove fastckpt log segment \"%s\": %m", path)));
			ereport(LOG,
					(errmsg("pg_fastckpt: removed log segment \"%s\" past the end of the log", path)));
		}
		else if (stat(path, &st) == 0 && start + (uint64) st.st_size > end_lsn)
		{
			int			fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
			char	   *zeros = palloc0(1024 * 1024);
			uint64		off = end_lsn - start;

			if (fd < 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not open fastckpt log segment \"%s\": %m", path)));
			while (off < (uint64) st.st_size)
			{
				ssize_t		n = pg_pwrite(fd, zeros, Min(1024 * 1024, st.st_size - off), (off_t) off);

				if (n <= 0)
					ereport(ERROR,
							(errcode_for_file_access(),
							 errmsg("could not clear the tail of fastckpt log segment \"%s\": %m", path)));
				off += n;
			}
			if (pg_fsync(fd) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not fsync fastckpt log segment \"%s\": %m", path)));
			CloseTransientFile(fd);
			pfree(zeros);
		}
		pfree(path);
	}
	list_free_deep(segs);
	fc_log_remove_temp_files();
	fc_fsync_dir_or_error(FC_LOG_DIR);
}

/* ---- reader: core/log_stream.c over PostgreSQL's file routines ---- */

struct FcLogReader
{
	fc_log_stream stream;
	int			fd;				/* open segment, or -1 */
	uint64		fd_segstart;
};

/* fc_log_read_fn: bytes of one segment; a missing one has none. */
static uint64_t
fc_log_reader_read(void *arg, uint64_t segstart, uint64_t offset, char *dst,
				   uint64_t len)
{
	FcLogReader *r = (FcLogReader *) arg;
	ssize_t		got;

	if (r->fd < 0 || r->fd_segstart != segstart)
	{
		char	   *path = fc_log_segment_path(segstart);

		if (r->fd >= 0)
			CloseTransientFile(r->fd);
		r->fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
		if (r->fd < 0)
		{
			if (errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not open fastckpt log segment \"%s\": %m", path)));
			pfree(path);
			return 0;
		}
		r->fd_segstart = segstart;
		pfree(path);
	}
	got = pg_pread(r->fd, dst, len, (off_t) offset);
	if (got < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read fastckpt log at position %llu: %m",
						(unsigned long long) (segstart + offset))));
	return (uint64_t) got;
}

FcLogReader *
fc_log_reader_open(uint64 start_lsn)
{
	FcLogReader *r = palloc0(sizeof(FcLogReader));

	r->fd = -1;
	fc_log_stream_init(&r->stream, palloc(FC_LOG_STREAM_BUFFER), fc_log_reader_read,
					   r, start_lsn);
	return r;
}

/*
 * The next valid record, or NULL at the end of the log.  The record stays
 * valid until the next call.
 */
const fc_log_header *
fc_log_reader_next(FcLogReader *r)
{
	return fc_log_stream_next(&r->stream);
}

/* Read the record at lsn next (a position a record was read from). */
void
fc_log_reader_seek(FcLogReader *r, uint64 lsn)
{
	fc_log_stream_seek(&r->stream, lsn);
}

/*
 * Close the segment file, keeping the bytes read: transaction ends close
 * transient files, so a reader used across transactions lets go of it.
 */
void
fc_log_reader_release(FcLogReader *r)
{
	if (r->fd >= 0)
		CloseTransientFile(r->fd);
	r->fd = -1;
}

/* Position just past the last valid record returned. */
uint64
fc_log_reader_end(FcLogReader *r)
{
	return r->stream.pos;
}

void
fc_log_reader_close(FcLogReader *r)
{
	if (r->fd >= 0)
		CloseTransientFile(r->fd);
	pfree(r->stream.chunk);
	pfree(r);
}

/*
 * Test-only: where the log is durable, for the power-loss model.  Called
 * under the flush lock by whoever flushed, so the positions only grow.
 */
void
fc_log_trace_synced(uint64 lsn)
{
	char		line[32];

	if (fc_trace_fd < 0)
		fc_trace_fd = open(FC_SYNC_TRACE_PATH, O_WRONLY | O_CREAT | PG_BINARY,
						   pg_file_create_mode);
	if (fc_trace_fd < 0)
		elog(FATAL, "could not open \"%s\": %m", FC_SYNC_TRACE_PATH);
	snprintf(line, sizeof(line), "%016llX\n", (unsigned long long) lsn);
	if (pg_pwrite(fc_trace_fd, line, 17, 0) != 17)
		elog(FATAL, "could not write \"%s\": %m", FC_SYNC_TRACE_PATH);
}
