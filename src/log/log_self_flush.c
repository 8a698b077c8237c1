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

/* the segment being written, during one flush */
static int	fc_self_fd = -1;
static uint64 fc_self_segstart = 0;

static void
fc_self_close(void)
{
	if (fc_self_fd >= 0)
		close(fc_self_fd);
	fc_self_fd = -1;
}

/*
 * Write and sync [from, to).  Only into segments the writer has prepared
 * (zero-filled to full size); false if one is missing or on any error.
 */
static bool
fc_self_write(uint64 from, uint64 to)
{
	uint64		pos = from;
	bool		ok = true;

	while (pos < to && ok)
	{
		uint64		segstart = pos - pos % FC_LOG_SEGMENT_SIZE;
		uint64		len;
		const char *src;

		if (fc_self_fd >= 0 && fc_self_segstart != segstart)
		{
			/* leaving a segment: it must be durable before the next one */
			if (pg_fdatasync(fc_self_fd) != 0)
				ok = false;
			fc_self_close();
		}
		if (ok && fc_self_fd < 0)
		{
			char	   *path = fc_log_segment_path(segstart);

			fc_self_fd = open(path, O_WRONLY | PG_BINARY, 0);
			pfree(path);
			fc_self_segstart = segstart;
			ok = (fc_self_fd >= 0);
		}
		if (!ok)
			break;
		src = fc_log_buffer_range(pos, Min(to, segstart + FC_LOG_SEGMENT_SIZE), &len);
		pgstat_report_wait_start(WAIT_EVENT_WAL_WRITE);
		ok = (pg_pwrite(fc_self_fd, src, len, (off_t) (pos - segstart)) == (ssize_t) len);
		pgstat_report_wait_end();
		pos += len;
	}
	if (ok)
	{
		pgstat_report_wait_start(WAIT_EVENT_WAL_SYNC);
		ok = (pg_fdatasync(fc_self_fd) == 0);
		pgstat_report_wait_end();
	}
	/* not kept open: an idle backend would pin a removed segment's space */
	fc_self_close();
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
