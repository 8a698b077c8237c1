/*-------------------------------------------------------------------------
 *
 * log_self_flush.c
 *	  pg_fastckpt.backend_flush: a committing backend that finds the log
 *	  writer idle writes and syncs the log itself.
 *
 * Handing a flush to a sleeping writer costs two wake-ups across CPUs (the
 * committer wakes the writer, the writer wakes the committer), and on a
 * small machine that is a large part of a commit.  A sleeping writer means
 * no flush is under way, so the committer does this one in its place,
 * under the same flush lock.  A busy writer keeps the job: its flushes are
 * pipelined, and commits arriving meanwhile share its next one.
 *
 * Anything going wrong here (the next segment not ready yet, a write or
 * sync error) hands the flush back to the writer, which reports the error
 * and retries from the buffer.  Nothing here raises an error: the caller
 * may be past its commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "pgstat.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"

#include "log/log.h"
#include "store/slot.h"

bool		fc_backend_flush = false;

/*
 * Write and sync [from, to).  Only into segments the writer has prepared
 * (zero-filled to full size); false if one is missing or on any error.
 * Each segment is opened for this flush only: an idle backend holding it
 * open would pin a removed segment's disk space.
 */
static bool
fc_self_write(uint64 from, uint64 to)
{
	uint64		pos = from;
	int			fd = -1;
	uint64		fd_segstart = 0;
	bool		ok = true;

	while (pos < to && ok)
	{
		uint64		segstart = pos - pos % FC_LOG_SEGMENT_SIZE;
		uint64		len;
		const char *src;

		if (fd >= 0 && fd_segstart != segstart)
		{
			/* leaving a segment: it must be durable before the next one */
			ok = (pg_fdatasync(fd) == 0);
			close(fd);
			fd = -1;
		}
		if (ok && fd < 0)
		{
			char	   *path = fc_log_segment_path(segstart);

			fd = open(path, O_WRONLY | PG_BINARY, 0);
			pfree(path);
			fd_segstart = segstart;
			ok = (fd >= 0);
		}
		if (!ok)
			break;
		src = fc_log_buffer_range(pos, Min(to, segstart + FC_LOG_SEGMENT_SIZE), &len);
		pgstat_report_wait_start(WAIT_EVENT_WAL_WRITE);
		ok = (pg_pwrite(fd, src, len, (off_t) (pos - segstart)) == (ssize_t) len);
		pgstat_report_wait_end();
		pos += len;
	}
	if (ok)
	{
		pgstat_report_wait_start(WAIT_EVENT_WAL_SYNC);
		ok = (pg_fdatasync(fd) == 0);
		pgstat_report_wait_end();
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * Flush the log ourselves if the writer is idle and nobody else is
 * flushing.  True once lsn is durable; false leaves it to the writer (the
 * caller wakes it and waits as usual).
 */
bool
fc_log_flush_self(uint64 lsn)
{
	LWLock	   *lock = fc_misc_lock(FC_LOCK_FLUSH);
	uint64		from;
	uint64		upto;

	if (!fc_log_writer_idle() || !LWLockConditionalAcquire(lock, LW_EXCLUSIVE))
		return false;
	from = fc_log_flushed_lsn();
	upto = fc_log_filled_upto();
	if (upto > from && fc_self_write(from, upto))
	{
		if (fc_test_sync_trace)
			fc_log_trace_synced(upto);
		fc_log_set_flushed(upto, true);
	}
	LWLockRelease(lock);
	return fc_log_flushed_lsn() >= lsn;
}
