/*-------------------------------------------------------------------------
 *
 * log_space.c
 *	  Keeping the log inside the segments that exist when the next one
 *	  cannot be created (a full log device).
 *
 * Only a checkpoint frees log space (it removes the segments before the
 * older installed checkpoint's start), and a checkpoint is installed only
 * once the log is durable up to its start, which is the insert position
 * when it begins.  So if the log were let run past the end of the last
 * segment that can be created, no checkpoint could ever be installed
 * again and the device would stay full until a restart.
 *
 * When the log writer finds that the next segment cannot be created, it
 * marks the log short of space, with the end of the last segment that
 * exists, and asks for checkpoints while the log's own older segments
 * hold the space.  Meanwhile each commit claims room for its records
 * before it takes its CSN; one that does not fit, with a reserve kept for
 * commits already past their claim, fails before it has logged anything,
 * so the log stays within the space and a checkpoint can start there.
 * Once the next segment can be created, the writer clears the mark.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "log/log.h"

/*
 * Room kept free for records appended without a claim: commits that
 * passed their claim before the log was marked short, ABORT records,
 * storages created on a first write.
 */
#define FC_LOG_SPACE_RESERVE	(2 * FC_LOG_MAX_RECORD)

typedef struct FcLogSpace
{
	pg_atomic_uint64 space_end; /* 0: not short of space */
	pg_atomic_uint64 claimed;	/* bytes claimed by commits not yet logged */
	slock_t		mutex;			/* protects reason */
	char		reason[256];
} FcLogSpace;

static FcLogSpace *fc_space = NULL;

/* what this backend's commit claimed (released after its records) */
static uint64 fc_my_claim = 0;

Size
fc_log_space_shmem_size(void)
{
	return sizeof(FcLogSpace);
}

void
fc_log_space_shmem_init(void)
{
	bool		found;

	fc_space = ShmemInitStruct("pg_fastckpt log space", sizeof(FcLogSpace), &found);
	if (!found)
	{
		pg_atomic_init_u64(&fc_space->space_end, 0);
		pg_atomic_init_u64(&fc_space->claimed, 0);
		SpinLockInit(&fc_space->mutex);
		fc_space->reason[0] = '\0';
	}
}

/* Writer: the log must end by end_lsn, the end of the last segment there is. */
void
fc_log_space_set_short(uint64 end_lsn, const char *reason)
{
	SpinLockAcquire(&fc_space->mutex);
	strlcpy(fc_space->reason, reason, sizeof(fc_space->reason));
	SpinLockRelease(&fc_space->mutex);
	pg_write_barrier();
	pg_atomic_write_u64(&fc_space->space_end, end_lsn);
}

/* Writer: the next segment exists again. */
void
fc_log_space_clear_short(void)
{
	pg_atomic_write_u64(&fc_space->space_end, 0);
}

/* The end the log must stay within, or 0 when it is not short of space. */
uint64
fc_log_space_end(void)
{
	return pg_atomic_read_u64(&fc_space->space_end);
}

/* Bytes between the log's end (with what is claimed) and space_end. */
static int64
fc_log_space_left(uint64 space_end)
{
	return (int64) space_end - (int64) fc_log_insert_lsn() -
		(int64) pg_atomic_read_u64(&fc_space->claimed) - FC_LOG_SPACE_RESERVE;
}

/*
 * relname: the table a write was refused on; NULL for a commit, which
 * needs up to need bytes.
 */
static void
fc_log_space_error(const char *relname, int64 left, uint64 need)
{
	char		reason[256];

	SpinLockAcquire(&fc_space->mutex);
	strlcpy(reason, fc_space->reason, sizeof(reason));
	SpinLockRelease(&fc_space->mutex);
	ereport(ERROR,
			(errcode(ERRCODE_DISK_FULL),
			 relname ?
			 errmsg("cannot write to fastckpt table \"%s\": the next fastckpt log segment cannot be created",
					relname) :
			 errmsg("cannot commit changes to fastckpt tables: the next fastckpt log segment cannot be created"),
			 relname ?
			 errdetail("%s. Until it can, the log must end within the segments there are: no room is left beyond %d kB kept in reserve.",
					   reason, FC_LOG_SPACE_RESERVE / 1024) :
			 errdetail("%s. Until it can, the log must end within the segments there are: this commit's records take up to %llu kB, %lld kB are left beyond %d kB kept in reserve.",
					   reason, (unsigned long long) (need + 1023) / 1024,
					   (long long) Max(left, 0) / 1024, FC_LOG_SPACE_RESERVE / 1024),
			 errhint("Free space on (or repair) the device holding pg_fastckpt/log; when older log segments fill it, checkpoints remove them. Retry shortly. "
					 "Give the log a device of at least pg_fastckpt.max_log_size plus two segments (%d MB).",
					 2 * FC_LOG_SEGMENT_SIZE / (1024 * 1024))));
}

/*
 * Commit: claim room for records of at most bytes before taking a CSN, or
 * fail while nothing is logged yet.  Costs one atomic read while the log
 * has room.
 */
void
fc_log_space_claim(uint64 bytes)
{
	uint64		space_end = pg_atomic_read_u64(&fc_space->space_end);
	int64		left;

	Assert(fc_my_claim == 0);
	if (likely(space_end == 0))
		return;
	/* records split at FC_LOG_MAX_RECORD: a header and padding each */
	bytes += (bytes / FC_LOG_MAX_RECORD + 1) * (FC_LOG_HEADER_SIZE + MAXIMUM_ALIGNOF);
	fc_my_claim = bytes;
	(void) pg_atomic_fetch_add_u64(&fc_space->claimed, bytes);
	left = fc_log_space_left(space_end);
	if (left < 0)
	{
		fc_log_space_release();
		fc_log_space_error(NULL, left + (int64) bytes, bytes);
	}
}

/* The claimed records are in the log (or will never be): give the room back. */
void
fc_log_space_release(void)
{
	if (fc_my_claim == 0)
		return;
	(void) pg_atomic_fetch_sub_u64(&fc_space->claimed, fc_my_claim);
	fc_my_claim = 0;
}

/* A write to a fastckpt table: refuse it at once when no room is left. */
void
fc_log_space_check_write(const char *relname)
{
	uint64		space_end = pg_atomic_read_u64(&fc_space->space_end);
	int64		left;

	if (likely(space_end == 0))
		return;
	left = fc_log_space_left(space_end);
	if (left <= 0)
		fc_log_space_error(relname, left, 0);
}
