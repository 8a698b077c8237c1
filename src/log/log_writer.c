/*-------------------------------------------------------------------------
 *
 * log_writer.c
 *	  The log writer background worker: the only process doing log I/O.
 *
 * Loop: take whatever prefix of the buffer is filled, write it to the
 * segment files, fdatasync, publish the new durable position and wake
 * every backend it covers, then start over at once (flush pipelining):
 * commits that arrived during one flush form the next group.
 *
 * Segments are zero-filled to their full size before records go in (in
 * the background, 256 kB at a time while the writer has nothing to flush,
 * each piece handed to write-back at once), so that a flush overwrites
 * allocated blocks and fdatasync has no file-size metadata to journal.
 * The pieces are small and already on their way to disk so that neither a
 * piece nor the segment's final fsync holds up a flush for long: commits
 * arriving meanwhile wait for it.
 *
 * A write or sync error (a full or failing device) acknowledges nothing:
 * the writer marks the log as failing, which makes new writes to fastckpt
 * tables fail with a clear error, and retries every second by writing the
 * not-yet-durable bytes again from the buffer (after a failed fsync the
 * kernel's copy cannot be trusted).  Once that succeeds, waiting commits
 * are acknowledged and writes are accepted again.
 *
 * A next segment that cannot be created (a full device) is noticed before
 * the log needs it, on entering a segment and while preparing the next:
 * the log is then kept within the segments there are (log_space.c) and
 * checkpoints are asked for while the log's own older segments fill the
 * device, since a log run past them could never be checkpointed again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "core/file_layout.h"
#include "log/log.h"
#include "store/slot.h"

PGDLLEXPORT void fc_log_writer_main(Datum arg);

#define FC_ZERO_CHUNK		(1024 * 1024)
#define FC_PREP_STEP		(256 * 1024)	/* background zero-fill piece */

/* unwaited log (fc_log_may_defer) is written within this, as wal_writer_delay */
#define FC_DEFERRED_FLUSH_MS	200

static int	fc_seg_fd = -1;
static uint64 fc_seg_start = 0;
static char *fc_zeros = NULL;

/* the next segment, being zero-filled in the background */
static int	fc_prep_fd = -1;
static uint64 fc_prep_segstart = 0;
static uint64 fc_prep_done = 0;
static TimestampTz fc_prep_retry_at = 0;

/* segment start + 1 of the next segment once it is known to exist, or 0 */
static uint64 fc_next_ready = 0;

/* the log is short of space: it must end here (log_space.c), or 0 */
static uint64 fc_short_end = 0;
static TimestampTz fc_prep_tried_at = 0;	/* last zero-fill tried while short */

void
fc_register_log_writer(void)
{
	fc_register_static_worker(BGWORKER_SHMEM_ACCESS, "fc_log_writer_main",
							  "pg_fastckpt log writer");
}

static void
fc_seg_close(void)
{
	if (fc_seg_fd >= 0)
		close(fc_seg_fd);
	fc_seg_fd = -1;
}

/* Write zeros to [from, to) of fd; false (with err set) on failure. */
static bool
fc_zero_fill(int fd, uint64 from, uint64 to, const char *what, char *err, size_t errlen)
{
	while (from < to)
	{
		ssize_t		n = pg_pwrite(fd, fc_zeros, Min(FC_ZERO_CHUNK, to - from), (off_t) from);

		if (n <= 0)
		{
			if (n == 0)
				errno = ENOSPC;
			snprintf(err, errlen, "could not zero-fill log segment \"%s\": %m", what);
			return false;
		}
		from += n;
	}
	return true;
}

/* The writer's memory context is never reset: free what is built here. */
static char *
fc_prep_path(uint64 segstart)
{
	char	   *path = fc_log_segment_path(segstart);
	char	   *tmp = psprintf("%s.tmp", path);

	pfree(path);
	return tmp;
}

static void
fc_prep_abandon(void)
{
	char	   *tmp = fc_prep_path(fc_prep_segstart);

	if (fc_prep_fd >= 0)
		close(fc_prep_fd);
	fc_prep_fd = -1;
	(void) unlink(tmp);
	pfree(tmp);
}

/*
 * One step of preparing segment segstart: start it, zero-fill one more
 * chunk, or finish it (sync, rename into place).  Returns 1 when the
 * segment is ready, 0 when more steps are needed, -1 on failure.
 */
static int
fc_prep_step(uint64 segstart, char *err, size_t errlen)
{
	char	   *path;
	char	   *tmp;
	struct stat st;
	LWLock	   *flush_lock;
	bool		took_lock;
	int			ready = 1;

	if (fc_prep_fd >= 0 && fc_prep_segstart != segstart)
		fc_prep_abandon();
	if (fc_prep_fd < 0)
	{
		path = fc_log_segment_path(segstart);
		if (stat(path, &st) == 0)
		{
			pfree(path);
			return 1;
		}
		pfree(path);
		tmp = fc_prep_path(segstart);
		fc_prep_fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | PG_BINARY, pg_file_create_mode);
		if (fc_prep_fd < 0)
		{
			snprintf(err, errlen, "could not create log segment \"%s\": %m", tmp);
			pfree(tmp);
			return -1;
		}
		pfree(tmp);
		fc_prep_segstart = segstart;
		fc_prep_done = 0;
	}
	if (fc_prep_done < FC_LOG_SEGMENT_SIZE)
	{
		uint64		to = Min(fc_prep_done + FC_PREP_STEP, FC_LOG_SEGMENT_SIZE);
		bool		filled;

		tmp = fc_prep_path(segstart);
		filled = fc_zero_fill(fc_prep_fd, fc_prep_done, to, tmp, err, errlen);
		pfree(tmp);
		if (!filled)
		{
			fc_prep_abandon();
			return -1;
		}
		/* start write-back now, so the final fsync finds little to do */
		fc_start_writeback(fc_prep_fd, (off_t) fc_prep_done,
						   (off_t) (to - fc_prep_done));
		fc_prep_done = to;
		if (fc_prep_done < FC_LOG_SEGMENT_SIZE)
			return 0;
	}
	if (pg_fsync(fc_prep_fd) != 0)
	{
		snprintf(err, errlen, "could not sync new log segment: %m");
		fc_prep_abandon();
		return -1;
	}
	close(fc_prep_fd);
	fc_prep_fd = -1;

	/*
	 * Rename it into place, then sync the directory: the new file is only
	 * durable once its entry is.  If that sync fails, take the file away
	 * again (nothing is in it yet); it is made again, and its entry synced,
	 * before the log goes into it.  Under the flush lock, which a
	 * committing backend flushing by itself holds (log_self_flush.c), so
	 * that it never writes into the file before its entry is durable.
	 */
	flush_lock = fc_misc_lock(FC_LOCK_FLUSH);
	took_lock = !LWLockHeldByMe(flush_lock);
	if (took_lock)
		LWLockAcquire(flush_lock, LW_EXCLUSIVE);
	tmp = fc_prep_path(segstart);
	path = fc_log_segment_path(segstart);
	if (rename(tmp, path) != 0)
	{
		snprintf(err, errlen, "could not rename \"%s\" to \"%s\": %m", tmp, path);
		(void) unlink(tmp);
		ready = -1;
	}
	else if (fc_fsync_dir(FC_LOG_DIR) != 0)
	{
		snprintf(err, errlen, "could not fsync directory \"%s\": %m", FC_LOG_DIR);
		(void) unlink(path);
		ready = -1;
	}
	if (took_lock)
		LWLockRelease(flush_lock);
	pfree(tmp);
	pfree(path);
	return ready;
}

/*
 * The segment starting at next cannot be created: the log must end before
 * it (log_space.c).  While older segments of the log itself fill the
 * device, ask for a checkpoint, which removes them (two may be needed: the
 * older of the two installed checkpoints keeps its segments).
 */
static void
fc_space_short(uint64 next, const char *reason)
{
	if (fc_short_end != next)
	{
		ereport(WARNING,
				(errmsg("pg_fastckpt: the next log segment cannot be created: %s", reason),
				 errdetail("Commits to fastckpt tables are refused once the log nears the end of the segments there are, until the next segment can be created."),
				 errhint("Checkpoints remove older log segments; if other files fill the device holding pg_fastckpt/log, free space on it.")));
		fc_short_end = next;
		fc_log_space_set_short(next, reason);
		fc_log_note_error(reason);
	}
	if (fc_log_first_lsn() + FC_LOG_SEGMENT_SIZE < next)
		fc_ckpt_request_quietly();
}

static void
fc_space_restored(void)
{
	if (fc_short_end == 0)
		return;
	fc_short_end = 0;
	fc_log_space_clear_short();
	ereport(LOG,
			(errmsg("pg_fastckpt: the next log segment could be created; commits to fastckpt tables are accepted again")));
}

/*
 * Entering the segment that starts at segstart: if the one after it does
 * not exist yet and the device lacks the room for it, say so now, while a
 * checkpoint can still start within the segments there are, rather than
 * when the writer needs it.  Only preparing the segment clears this (the
 * free space a file system reports is not always what zeros take).
 */
/*
 * Does the device say it lacks the room for the rest of segment next?
 * Sets what it has and what is needed.  False when it cannot tell.
 */
static bool
fc_space_lacking(uint64 next, uint64 *avail, uint64 *need)
{
	struct statvfs vfs;

	if (statvfs(FC_LOG_DIR, &vfs) != 0)
		return false;
	*avail = (uint64) vfs.f_bavail * vfs.f_frsize;
	*need = FC_LOG_SEGMENT_SIZE;
	if (fc_prep_fd >= 0 && fc_prep_segstart == next)
		*need -= fc_prep_done;
	return *avail < *need;
}

static void
fc_space_probe(uint64 segstart)
{
	uint64		next = segstart + FC_LOG_SEGMENT_SIZE;
	uint64		need;
	uint64		avail;
	struct stat st;
	char	   *path;
	bool		exists;
	char		reason[256];

	if (fc_next_ready == next + 1)
		return;
	path = fc_log_segment_path(next);
	exists = (stat(path, &st) == 0);
	pfree(path);
	if (exists || !fc_space_lacking(next, &avail, &need))
		return;
	snprintf(reason, sizeof(reason),
			 "%llu kB are free on the device holding pg_fastckpt/log, log segment %016llX needs %llu kB",
			 (unsigned long long) (avail / 1024), (unsigned long long) next,
			 (unsigned long long) (need / 1024));
	fc_space_short(next, reason);
}

/* Open the segment holding lsn, preparing it first if needed. */
static bool
fc_seg_open(uint64 lsn, char *err, size_t errlen)
{
	uint64		segstart = lsn - lsn % FC_LOG_SEGMENT_SIZE;
	char	   *path;
	struct stat st;
	int			rc;

	if (fc_seg_fd >= 0 && fc_seg_start == segstart)
		return true;
	fc_seg_close();
	while ((rc = fc_prep_step(segstart, err, errlen)) == 0)
		;
	if (rc < 0)
		return false;
	path = fc_log_segment_path(segstart);
	fc_seg_fd = open(path, O_WRONLY | PG_BINARY, pg_file_create_mode);
	if (fc_seg_fd < 0 || fstat(fc_seg_fd, &st) != 0)
	{
		snprintf(err, errlen, "could not open log segment \"%s\": %m", path);
		pfree(path);
		fc_seg_close();
		return false;
	}
	/* a segment cut short (by recovery, or a crash test) is filled up again */
	if ((uint64) st.st_size < FC_LOG_SEGMENT_SIZE)
	{
		if (!fc_zero_fill(fc_seg_fd, (uint64) st.st_size, FC_LOG_SEGMENT_SIZE, path, err, errlen) ||
			pg_fsync(fc_seg_fd) != 0)
		{
			if (err[0] == '\0')
				snprintf(err, errlen, "could not sync log segment \"%s\": %m", path);
			pfree(path);
			fc_seg_close();
			return false;
		}
	}
	pfree(path);
	fc_seg_start = segstart;
	fc_space_probe(segstart);
	return true;
}

/*
 * While idle: prepare the segment after the current one.  True if it did
 * some work (the caller then looks for records again before sleeping).
 */
static bool
fc_prepare_next_segment(void)
{
	char		err[512];
	int			rc;
	uint64		flushed = fc_log_flushed_lsn();
	uint64		next;

	/* after the segment being filled, whoever flushes it (backend_flush) */
	next = flushed - flushed % FC_LOG_SEGMENT_SIZE + FC_LOG_SEGMENT_SIZE;

	/* asked every time the writer goes idle: answer without a system call */
	if (fc_next_ready == next + 1)
	{
		fc_space_restored();
		return false;
	}
	if (GetCurrentTimestamp() < fc_prep_retry_at)
		return false;

	/*
	 * The segment the next record goes to first: a log whose first segment
	 * is missing reads as damage (a new log, or one whose first checkpoint
	 * starts on a segment boundary with nothing written since).
	 */
	err[0] = '\0';
	if (!fc_seg_open(next - FC_LOG_SEGMENT_SIZE, err, sizeof(err)))
	{
		fc_space_short(next - FC_LOG_SEGMENT_SIZE, err);
		fc_prep_retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 1000);
		return false;
	}
	if (fc_prep_fd < 0)
	{
		char	   *path = fc_log_segment_path(next);
		struct stat st;
		bool		exists = (stat(path, &st) == 0);

		pfree(path);
		if (exists)
		{
			fc_next_ready = next + 1;
			fc_space_restored();
			return false;
		}
	}
	/*
	 * Short of space: look at the free space each second, asking for
	 * checkpoints meanwhile, but zero-fill only once the segment seems to
	 * fit, or every 10 s (a file system may store zeros in less).
	 */
	if (fc_short_end == next && fc_prep_fd < 0)
	{
		TimestampTz now = GetCurrentTimestamp();
		uint64		avail;
		uint64		need;

		if (fc_space_lacking(next, &avail, &need) &&
			now < TimestampTzPlusMilliseconds(fc_prep_tried_at, 10000))
		{
			fc_space_short(next, "");
			fc_prep_retry_at = TimestampTzPlusMilliseconds(now, 1000);
			return false;
		}
		fc_prep_tried_at = now;
	}
	err[0] = '\0';
	rc = fc_prep_step(next, err, sizeof(err));
	if (rc < 0)
	{
		/* not fatal yet: the log ends before it, and a checkpoint may free room */
		fc_space_short(next, err);
		fc_prep_retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 1000);
		return false;
	}
	if (rc > 0)
	{
		fc_next_ready = next + 1;
		fc_space_restored();
	}
	return true;
}

static bool
fc_seg_sync(char *err, size_t errlen)
{
	if (fc_seg_fd >= 0 && pg_fdatasync(fc_seg_fd) != 0)
	{
		snprintf(err, errlen, "could not fdatasync log segment %016llX: %m",
				 (unsigned long long) fc_seg_start);
		fc_seg_close();
		return false;
	}
	return true;
}

/*
 * Write and sync [from, to); false (with err set) on any failure.  Sets
 * *durable to the end of what is on disk even so: the segments finished
 * before the failure.
 */
static bool
fc_write_range(uint64 from, uint64 to, uint64 *durable, char *err, size_t errlen)
{
	uint64		pos = from;

	*durable = from;
	while (pos < to)
	{
		uint64		segstart = pos - pos % FC_LOG_SEGMENT_SIZE;
		uint64		segend = Min(to, segstart + FC_LOG_SEGMENT_SIZE);
		uint64		len;
		const char *src;
		ssize_t		n;

		if (fc_seg_fd >= 0 && fc_seg_start != segstart)
		{
			/* finishing a segment: it must be durable before we move on */
			if (!fc_seg_sync(err, errlen))
				return false;
			*durable = pos;
		}
		if (!fc_seg_open(pos, err, errlen))
			return false;
		src = fc_log_buffer_range(pos, segend, &len);
		pgstat_report_wait_start(WAIT_EVENT_WAL_WRITE);
		n = pg_pwrite(fc_seg_fd, src, len, (off_t) (pos - segstart));
		pgstat_report_wait_end();
		if (n <= 0)
		{
			if (n == 0)
				errno = ENOSPC;
			snprintf(err, errlen, "could not write log segment %016llX at offset %llu: %m",
					 (unsigned long long) segstart,
					 (unsigned long long) (pos - segstart));
			fc_seg_close();
			return false;
		}
		pos += n;
	}
	pgstat_report_wait_start(WAIT_EVENT_WAL_SYNC);
	if (!fc_seg_sync(err, errlen))
	{
		pgstat_report_wait_end();
		return false;
	}
	pgstat_report_wait_end();
	*durable = to;
	return true;
}

void
fc_log_writer_main(Datum arg)
{
	uint64		written;
	bool		failing = false;
	TimestampTz defer_since = 0;	/* unwaited log left unwritten since */
	long		defer_ms = 0;
	char		err[512];

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	fc_zeros = palloc0(FC_ZERO_CHUNK);
	written = fc_log_writer_attach();
	/* a writer before us (terminated) may have found the log short */
	fc_short_end = fc_log_space_end();
	if (fc_test_sync_trace)
		fc_log_trace_synced(written);
	ereport(LOG,
			(errmsg("pg_fastckpt: log writer started at log position %llu",
					(unsigned long long) written)));

	for (;;)
	{
		uint64		upto;
		bool		wrote = false;
		bool		deferring;

		/* with pg_fastckpt.backend_flush, a backend may have flushed */
		LWLockAcquire(fc_misc_lock(FC_LOCK_FLUSH), LW_EXCLUSIVE);
		written = Max(written, fc_log_flushed_lsn());
		upto = fc_log_filled_upto();
		deferring = !ShutdownRequestPending && upto > written &&
			fc_log_may_defer(written, upto);
		if (deferring)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (defer_since == 0)
				defer_since = now;
			defer_ms = TimestampDifferenceMilliseconds(now,
													   TimestampTzPlusMilliseconds(defer_since,
																				   FC_DEFERRED_FLUSH_MS));
			deferring = defer_ms > 0;
		}
		if (deferring)
			upto = written;
		else
			defer_since = 0;
		if (upto > written)
		{
			uint64		durable;

			wrote = fc_write_range(written, upto, &durable, err, sizeof(err));
			/* after a failure, commits before it are still acknowledged */
			if (durable > written)
			{
				if (fc_test_sync_trace)
					fc_log_trace_synced(durable);
				fc_log_set_flushed(durable, false);
			}
		}
		LWLockRelease(fc_misc_lock(FC_LOCK_FLUSH));

		if (upto > written)
		{
			if (!wrote)
			{
				if (!failing)
					ereport(WARNING,
							(errmsg("pg_fastckpt: %s", err),
							 errdetail("No commit is acknowledged and writes to fastckpt tables are refused until the log can be written; retrying every second.")));
				failing = true;
				fc_log_set_failing(err);
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 1000L, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				if (ShutdownRequestPending)
					fc_static_worker_exit();
				continue;
			}
			if (failing)
			{
				ereport(LOG,
						(errmsg("pg_fastckpt: the log can be written again; resuming")));
				failing = false;
				fc_log_clear_failing();
			}
			written = upto;
			continue;
		}

		if (ShutdownRequestPending)
		{
			if (deferring)
				continue;		/* write what was left for later first */
			fc_static_worker_exit();
		}
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (fc_prepare_next_segment())
			continue;
		if (!fc_log_writer_sleep_begin(written, deferring))
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 deferring ? defer_ms : 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		fc_log_writer_sleep_end();
	}
}
