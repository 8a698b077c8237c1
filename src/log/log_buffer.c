/*-------------------------------------------------------------------------
 *
 * log_buffer.c
 *	  The shared log buffer: decoupled fill, durability waits, backpressure.
 *
 * Inserting a record takes no lock (Aether, section 4): space is reserved
 * with one atomic fetch-add on the insert position, the record is copied
 * into the ring with no lock held, and the inserter then marks itself done.
 * While copying, each inserter advertises a position no later than its
 * record's start; the log writer flushes up to the smallest advertised
 * position (or the insert position when nobody is copying), so it only
 * ever writes filled bytes.
 *
 * A committing backend that must wait for durability publishes the
 * position it waits for; after each flush the writer sets the latch of
 * every backend whose position is covered, all at once.
 *
 * The ring never overwrites bytes the writer has not made durable: an
 * inserter whose record would do so waits for the writer first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "tcop/tcopprot.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "log/log.h"

#define FC_NOT_INSERTING	PG_UINT64_MAX

/* Per-process state, one cache line each. */
typedef struct FcLogProc
{
	pg_atomic_uint64 inserting_at;	/* FC_NOT_INSERTING when idle */
	pg_atomic_uint64 wait_lsn;	/* 0 when not waiting */
	pg_atomic_uint32 voidable_xid;	/* see fc_log_set_voidable() */
	pg_atomic_uint32 voidable_subxacts;
	/* counters written by their own process only */
	uint64		records[FC_REC_KIND_MAX + 1];
	uint64		bytes;
	uint64		commit_waits;
	uint64		commit_wait_us;
	uint64		buffer_full_waits;
} FcLogProc;

typedef union FcLogProcPadded
{
	FcLogProc	proc;
	char		pad[2 * PG_CACHE_LINE_SIZE];
} FcLogProcPadded;

typedef struct FcLogShared
{
	pg_atomic_uint64 insert_lsn;	/* next byte to reserve */
	char		pad1[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];
	pg_atomic_uint64 flushed_lsn;	/* durable up to here */
	pg_atomic_uint32 writer_sleeping;
	pg_atomic_uint32 ready;		/* recovery has set the start position */
	pg_atomic_uint32 failing;	/* the writer cannot write: refuse writes */
	char		pad2[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64) - 3 * sizeof(pg_atomic_uint32)];
	pg_atomic_uint64 next_csn;
	char		pad3[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];
	pg_atomic_uint64 unwaited_upto; /* end of the last record no commit waits
									 * for (test_commit_no_wait) */
	char		pad4[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];
	int			writer_procno;	/* -1: no writer attached */
	int			nprocs;
	uint64		buffer_size;
	Size		buffer_offset;
	ConditionVariable ready_cv;
	uint64		flushes;		/* written under the flush lock */
	uint64		backend_flushes;	/* of them, by committing backends */
	uint64		write_errors;
	slock_t		error_lock;
	char		last_error[256];
	/* counters of processes that reset them, subtracted on read */
	uint64		reset_base[FC_REC_KIND_MAX + 7];
	FcLogProcPadded procs[FLEXIBLE_ARRAY_MEMBER];
} FcLogShared;

static FcLogShared *fc_log = NULL;
static char *fc_log_ring = NULL;

static Size
fc_log_header_size(void)
{
	return TYPEALIGN(PG_CACHE_LINE_SIZE,
					 add_size(offsetof(FcLogShared, procs),
							  mul_size(sizeof(FcLogProcPadded), fc_total_procs())));
}

Size
fc_log_shmem_size(void)
{
	return add_size(add_size(fc_log_header_size(), PG_CACHE_LINE_SIZE),
					(Size) fc_log_buffer_size_kb * 1024);
}

void
fc_log_shmem_init(void)
{
	bool		found;
	char	   *base;

	base = ShmemInitStruct("pg_fastckpt log", fc_log_shmem_size(), &found);
	fc_log = (FcLogShared *) TYPEALIGN(PG_CACHE_LINE_SIZE, base);
	if (!found)
	{
		int			nprocs = fc_total_procs();

		memset(fc_log, 0, offsetof(FcLogShared, procs));
		pg_atomic_init_u64(&fc_log->insert_lsn, 0);
		pg_atomic_init_u64(&fc_log->flushed_lsn, 0);
		pg_atomic_init_u64(&fc_log->next_csn, 1);
		pg_atomic_init_u64(&fc_log->unwaited_upto, 0);
		pg_atomic_init_u32(&fc_log->writer_sleeping, 0);
		pg_atomic_init_u32(&fc_log->ready, 0);
		pg_atomic_init_u32(&fc_log->failing, 0);
		fc_log->writer_procno = -1;
		fc_log->nprocs = nprocs;
		fc_log->buffer_size = (uint64) fc_log_buffer_size_kb * 1024;
		fc_log->buffer_offset = fc_log_header_size();
		ConditionVariableInit(&fc_log->ready_cv);
		SpinLockInit(&fc_log->error_lock);
		for (int i = 0; i < nprocs; i++)
		{
			FcLogProc  *p = &fc_log->procs[i].proc;

			memset(p, 0, sizeof(FcLogProcPadded));
			pg_atomic_init_u64(&p->inserting_at, FC_NOT_INSERTING);
			pg_atomic_init_u64(&p->wait_lsn, 0);
			pg_atomic_init_u32(&p->voidable_xid, InvalidTransactionId);
			pg_atomic_init_u32(&p->voidable_subxacts, 0);
		}
	}
	fc_log_ring = (char *) fc_log + fc_log->buffer_offset;
}

static inline FcLogProc *
fc_log_me(void)
{
	Assert(MyProc != NULL && MyProc->pgprocno < fc_log->nprocs);
	return &fc_log->procs[MyProc->pgprocno].proc;
}

static void
fc_log_wake_writer(void)
{
	int			procno;

	pg_memory_barrier();
	if (pg_atomic_read_u32(&fc_log->writer_sleeping) == 0)
		return;
	procno = fc_log->writer_procno;
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

uint64
fc_log_flushed_lsn(void)
{
	return pg_atomic_read_u64(&fc_log->flushed_lsn);
}

bool
fc_log_is_ready(void)
{
	return pg_atomic_read_u32(&fc_log->ready) != 0;
}

/* Does the log writer fail to write the log (full or failing device)? */
bool
fc_log_is_failing(void)
{
	return pg_atomic_read_u32(&fc_log->failing) != 0;
}

/* Called by startup recovery once it knows where the log ends. */
void
fc_log_start(uint64 start_lsn, uint64 next_csn)
{
	pg_atomic_write_u64(&fc_log->insert_lsn, start_lsn);
	pg_atomic_write_u64(&fc_log->flushed_lsn, start_lsn);
	pg_atomic_write_u64(&fc_log->next_csn, next_csn);
	pg_write_barrier();
	pg_atomic_write_u32(&fc_log->ready, 1);
	ConditionVariableBroadcast(&fc_log->ready_cv);
}

/* Commit sequence numbers; the caller holds the install latch shared. */
uint64
fc_log_next_csn(void)
{
	return pg_atomic_fetch_add_u64(&fc_log->next_csn, 1);
}

/* The next CSN, without taking it (checkpoint swap, under the latch). */
uint64
fc_log_peek_next_csn(void)
{
	return pg_atomic_read_u64(&fc_log->next_csn);
}

/* Where the next record will go: always a record boundary. */
uint64
fc_log_insert_lsn(void)
{
	return pg_atomic_read_u64(&fc_log->insert_lsn);
}

/*
 * Wait until flushed_lsn >= lsn, with our wait position published so the
 * writer wakes us.  Interrupts are held by the caller or checked by it.
 */
static void
fc_log_sleep_until_flushed(FcLogProc *me, uint64 lsn)
{
	pg_atomic_write_u64(&me->wait_lsn, lsn);
	fc_log_wake_writer();
	while (pg_atomic_read_u64(&fc_log->flushed_lsn) < lsn)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	pg_atomic_write_u64(&me->wait_lsn, 0);
}

/*
 * Append a sealed-on-insert record (its header filled in, len set) and
 * return the log position just past it.  Cannot fail: the space is
 * reserved before anything else, and an abandoned reservation would stall
 * the writer forever.
 */
uint64
fc_log_insert(void *record, uint32 len)
{
	FcLogProc  *me = fc_log_me();
	uint64		padded = FC_LOG_ALIGNED(len);
	uint64		start;
	uint64		end;
	uint64		off;
	uint64		first;

	Assert(pg_atomic_read_u32(&fc_log->ready) != 0);
	Assert(padded <= fc_log->buffer_size / 2);

	HOLD_INTERRUPTS();
	pg_atomic_write_u64(&me->inserting_at, pg_atomic_read_u64(&fc_log->insert_lsn));
	pg_memory_barrier();
	start = pg_atomic_fetch_add_u64(&fc_log->insert_lsn, padded);
	pg_atomic_write_u64(&me->inserting_at, start);
	end = start + padded;

	/* backpressure: do not overwrite bytes that are not durable yet */
	if (end - pg_atomic_read_u64(&fc_log->flushed_lsn) > fc_log->buffer_size)
	{
		me->buffer_full_waits++;
		fc_log_sleep_until_flushed(me, end - fc_log->buffer_size);
	}

	fc_log_seal(record, start);
	off = start % fc_log->buffer_size;
	first = Min(len, fc_log->buffer_size - off);
	memcpy(fc_log_ring + off, record, first);
	if (first < len)
		memcpy(fc_log_ring, (char *) record + first, len - first);
	if (padded > len)
	{
		uint64		poff = (start + len) % fc_log->buffer_size;

		/* padding never wraps: the ring size is a multiple of 8 */
		memset(fc_log_ring + poff, 0, padded - len);
	}

	pg_write_barrier();
	pg_atomic_write_u64(&me->inserting_at, FC_NOT_INSERTING);
	/*
	 * With backend_flush, the committer's wait flushes or wakes the writer.
	 * Unwaited commits (benchmarking) let it batch (fc_log_may_defer).
	 */
	if (fc_test_commit_no_wait)
	{
		uint64		unwaited = pg_atomic_read_u64(&fc_log->unwaited_upto);
		uint64		flushed = pg_atomic_read_u64(&fc_log->flushed_lsn);

		if (end > unwaited)
			pg_atomic_write_u64(&fc_log->unwaited_upto, end);
		/* the first one starts the writer's deferral timer */
		if (unwaited <= flushed || end - flushed > fc_log->buffer_size / 4)
			fc_log_wake_writer();
	}
	else if (!fc_backend_flush)
		fc_log_wake_writer();
	RESUME_INTERRUPTS();

	me->records[((fc_log_header *) record)->kind]++;
	me->bytes += padded;
	return end;
}

/*
 * A read met rows whose commit is not durable yet, and the log cannot be
 * written: fail the read rather than hold it for as long as the outage
 * lasts (it may not return those rows before they are durable).
 */
static void
fc_log_read_fails(void)
{
	char		error[256];

	SpinLockAcquire(&fc_log->error_lock);
	strlcpy(error, fc_log->last_error, sizeof(error));
	SpinLockRelease(&fc_log->error_lock);
	ereport(ERROR,
			(errcode(ERRCODE_DISK_FULL),
			 errmsg("cannot return rows of fastckpt tables: a transaction that wrote them waits for the fastckpt log, which cannot be written"),
			 errdetail("Rows are returned only once the commit that wrote them is durable. The log writer failed: %s", error),
			 errhint("Free space on (or repair) the device holding pg_fastckpt/log in the data directory, then retry. "
					 "Reads that meet only rows committed before the failure work meanwhile.")));
}

/*
 * Wait until the log is durable up to lsn.  Before a commit is visible
 * (strict mode, or a transaction that also wrote WAL) and for reads,
 * interrupts work as usual: an error aborts the transaction, and the abort
 * is logged; a read also fails while the log cannot be written.  After
 * commit (early lock release) the transaction is already visible, so a
 * cancel cannot undo it: like PostgreSQL's synchronous replication we keep
 * waiting on a cancel, and on termination leave without telling the client
 * that the commit succeeded.
 */
void
fc_log_wait_flushed(uint64 lsn, FcLogWait kind)
{
	FcLogProc  *me;
	TimestampTz start;
	int			rc;

	if (pg_atomic_read_u64(&fc_log->flushed_lsn) >= lsn)
		return;
	me = fc_log_me();
	start = GetCurrentTimestamp();
	pg_atomic_write_u64(&me->wait_lsn, lsn);
	if (!fc_backend_flush || !fc_log_flush_self(lsn))
		fc_log_wake_writer();
	for (;;)
	{
		if (pg_atomic_read_u64(&fc_log->flushed_lsn) >= lsn)
			break;
		if (kind == FC_LOG_WAIT_AFTER_COMMIT)
		{
			if (ProcDiePending)
			{
				ereport(WARNING,
						(errcode(ERRCODE_ADMIN_SHUTDOWN),
						 errmsg("canceling the wait for the fastckpt log and terminating connection due to administrator command"),
						 errdetail("The transaction has already committed but might not be durable.")));
				whereToSendOutput = DestNone;
				break;
			}
			if (QueryCancelPending)
			{
				QueryCancelPending = false;
				ereport(WARNING,
						(errmsg("cannot cancel the wait for the fastckpt log"),
						 errdetail("The transaction has already committed and is visible; the commit is acknowledged only once its log record is durable.")));
			}
		}
		else
		{
			if (kind == FC_LOG_WAIT_READ && pg_atomic_read_u32(&fc_log->failing) != 0)
			{
				pg_atomic_write_u64(&me->wait_lsn, 0);
				fc_log_read_fails();
			}
			CHECK_FOR_INTERRUPTS();
		}
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
					   1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
		{
			/*
			 * The server is going down.  Never acknowledge; after commit,
			 * exit the way PostgreSQL's synchronous replication does (an
			 * exit right here would try to abort a committed transaction).
			 */
			if (kind != FC_LOG_WAIT_AFTER_COMMIT)
				proc_exit(1);
			ProcDiePending = true;
			whereToSendOutput = DestNone;
			break;
		}
	}
	pg_atomic_write_u64(&me->wait_lsn, 0);
	me->commit_waits++;
	me->commit_wait_us += (uint64) Max(0, GetCurrentTimestamp() - start);
}

/*
 * Wait for lsn to be durable without taking interrupts, for waits in paths
 * that must not fail.  Gives up (false) when the postmaster is gone, when
 * the process is being terminated and, with give_up_when_failing, while
 * the log cannot be written.
 */
static bool
fc_log_wait_uninterrupted(uint64 lsn, bool give_up_when_failing)
{
	FcLogProc  *me;
	bool		durable;

	if (pg_atomic_read_u64(&fc_log->flushed_lsn) >= lsn)
		return true;
	me = fc_log_me();
	pg_atomic_write_u64(&me->wait_lsn, lsn);
	fc_log_wake_writer();
	while (!(durable = pg_atomic_read_u64(&fc_log->flushed_lsn) >= lsn))
	{
		int			rc;

		if (give_up_when_failing ? pg_atomic_read_u32(&fc_log->failing) != 0 :
			ProcDiePending)
			break;
		rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
					   100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
			break;
	}
	pg_atomic_write_u64(&me->wait_lsn, 0);
	return durable;
}

/*
 * Wait, taking no interrupts, for an ABORT record to be durable: a client
 * told that its transaction rolled back must not see it back after a
 * crash.  Runs in the abort path, so it neither fails nor waits forever:
 * it gives up while the log cannot be written (the ABORT record is then
 * written, after what it voids, once it can) or the postmaster is gone.
 */
void
fc_log_wait_durable_quietly(uint64 lsn)
{
	(void) fc_log_wait_uninterrupted(lsn, true);
}

/*
 * Wait, taking no interrupts, before output that may carry what lsn's
 * record wrote leaves for the client (txn/client_output.c).  Runs inside
 * PostgreSQL's sending of messages, errors included, so it cannot fail:
 * a log that cannot be written is waited out like a commit; false when
 * the process is being terminated or the postmaster is gone, and the
 * output must then not be sent.
 */
bool
fc_log_wait_for_client(uint64 lsn)
{
	return fc_log_wait_uninterrupted(lsn, false);
}

/*
 * A transaction whose records are in the log stays "voidable" until it has
 * committed or logged its ABORT record.  PostgreSQL shows an aborting
 * transaction as ended before our abort callback logs that record; in
 * between, its rows must still look busy to others (visibility.c), or one
 * of them could act on the rollback and log a record that the ABORT record
 * does not precede: a crash could then keep both.  Subtransaction xids are
 * not published one by one: any later xid counts while the flag is set,
 * which only makes a rare waiter wait a little longer.
 */
void
fc_log_set_voidable(TransactionId top_xid, bool with_subxacts)
{
	FcLogProc  *me = fc_log_me();

	pg_atomic_write_u32(&me->voidable_subxacts, with_subxacts ? 1 : 0);
	pg_atomic_write_u32(&me->voidable_xid, top_xid);
	pg_memory_barrier();
}

void
fc_log_clear_voidable(void)
{
	FcLogProc  *me = fc_log_me();

	if (pg_atomic_read_u32(&me->voidable_xid) == InvalidTransactionId)
		return;
	/* our ABORT record, if any, is reserved before anyone sees us done */
	pg_memory_barrier();
	pg_atomic_write_u32(&me->voidable_xid, InvalidTransactionId);
}

/*
 * May xid, which is neither running nor committed, belong to a transaction
 * that has not logged its ABORT record yet?  Only asked before caching
 * "aborted" in a row's hints, which is rare.
 */
bool
fc_log_xid_voidable(TransactionId xid)
{
	pg_memory_barrier();
	for (int i = 0; i < fc_log->nprocs; i++)
	{
		FcLogProc  *p = &fc_log->procs[i].proc;
		TransactionId top = pg_atomic_read_u32(&p->voidable_xid);

		if (top == InvalidTransactionId)
			continue;
		if (xid == top ||
			(pg_atomic_read_u32(&p->voidable_subxacts) != 0 &&
			 TransactionIdFollows(xid, top)))
			return true;
	}
	return false;
}

/*
 * Refuse new writes while the log cannot be written (full or failing
 * device): they could never be acknowledged.
 */
void
fc_log_check_writable(const char *relname)
{
	char		error[256];

	if (likely(pg_atomic_read_u32(&fc_log->failing) == 0))
	{
		fc_log_space_check_write(relname);
		return;
	}
	SpinLockAcquire(&fc_log->error_lock);
	strlcpy(error, fc_log->last_error, sizeof(error));
	SpinLockRelease(&fc_log->error_lock);
	ereport(ERROR,
			(errcode(ERRCODE_DISK_FULL),
			 errmsg("cannot write to fastckpt table \"%s\": the fastckpt log cannot be written",
					relname),
			 errdetail("The log writer failed: %s", error),
			 errhint("Free space on (or repair) the device holding pg_fastckpt/log in the data directory. "
					 "Waiting commits are acknowledged and writes are accepted again as soon as the log can be written.")));
}

/* ---- the log writer's side ---- */

uint64
fc_log_writer_attach(void)
{
	fc_log->writer_procno = MyProc->pgprocno;
	pg_memory_barrier();
	ConditionVariablePrepareToSleep(&fc_log->ready_cv);
	while (pg_atomic_read_u32(&fc_log->ready) == 0)
	{
		/* recovery may never open the log (damaged checkpoints) */
		if (ShutdownRequestPending)
			fc_static_worker_exit();
		(void) ConditionVariableTimedSleep(&fc_log->ready_cv, 1000L, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	pg_read_barrier();
	return pg_atomic_read_u64(&fc_log->flushed_lsn);
}

/* End of the filled prefix: nothing before it is still being copied. */
uint64
fc_log_filled_upto(void)
{
	uint64		limit = pg_atomic_read_u64(&fc_log->insert_lsn);

	pg_memory_barrier();
	for (int i = 0; i < fc_log->nprocs; i++)
	{
		uint64		at = pg_atomic_read_u64(&fc_log->procs[i].proc.inserting_at);

		if (at < limit)
			limit = at;
	}
	pg_read_barrier();
	return limit;
}

/* Contiguous bytes of the ring from lsn, at most up to end. */
const char *
fc_log_buffer_range(uint64 lsn, uint64 end, uint64 *len)
{
	uint64		off = lsn % fc_log->buffer_size;

	*len = Min(end - lsn, fc_log->buffer_size - off);
	return fc_log_ring + off;
}

/*
 * Publish durability and wake every backend it covers, in one sweep.
 * Called under the flush lock, by the writer or a backend (backend_flush).
 */
void
fc_log_set_flushed(uint64 lsn, bool by_backend)
{
	pg_atomic_write_u64(&fc_log->flushed_lsn, lsn);
	fc_log->flushes++;
	if (by_backend)
		fc_log->backend_flushes++;
	pg_memory_barrier();
	for (int i = 0; i < fc_log->nprocs; i++)
	{
		uint64		w = pg_atomic_read_u64(&fc_log->procs[i].proc.wait_lsn);

		if (w != 0 && w <= lsn)
			SetLatch(&ProcGlobal->allProcs[i].procLatch);
	}
}

/*
 * May the writer leave the filled log after `written` for later?  Only
 * when unwaited commits (test_commit_no_wait, benchmarking) appended to
 * it, nobody waits for any of it, and less than a quarter of the ring is
 * filled: the writer then batches, as PostgreSQL's WAL writer does for
 * asynchronous commits, instead of flushing each record as it comes.  Any
 * other log is flushed as soon as it is filled.
 */
bool
fc_log_may_defer(uint64 written, uint64 upto)
{
	if (pg_atomic_read_u64(&fc_log->unwaited_upto) <= written ||
		upto - written > fc_log->buffer_size / 4)
		return false;
	pg_memory_barrier();
	for (int i = 0; i < fc_log->nprocs; i++)
	{
		uint64		w = pg_atomic_read_u64(&fc_log->procs[i].proc.wait_lsn);

		if (w > written)
			return false;
	}
	return true;
}

/*
 * Announce that the writer is about to sleep; false if work arrived
 * meanwhile (an inserter or a waiter that comes after this sees the flag
 * and wakes the writer).  With `deferring`, filled log that
 * fc_log_may_defer lets wait is no work.
 */
bool
fc_log_writer_sleep_begin(uint64 written, bool deferring)
{
	uint64		upto;

	pg_atomic_write_u32(&fc_log->writer_sleeping, 1);
	pg_memory_barrier();
	upto = fc_log_filled_upto();
	if (upto > written && !(deferring && fc_log_may_defer(written, upto)))
	{
		pg_atomic_write_u32(&fc_log->writer_sleeping, 0);
		return false;
	}
	return true;
}

void
fc_log_writer_sleep_end(void)
{
	pg_atomic_write_u32(&fc_log->writer_sleeping, 0);
}

/* Is the writer asleep, with no flush of its own under way or failing? */
bool
fc_log_writer_idle(void)
{
	return pg_atomic_read_u32(&fc_log->writer_sleeping) != 0 &&
		pg_atomic_read_u32(&fc_log->failing) == 0;
}

void
fc_log_set_failing(const char *error)
{
	fc_log_note_error(error);
	fc_log->write_errors++;
	pg_atomic_write_u32(&fc_log->failing, 1);
}

/* An error the log writer met that does not (yet) stop the log. */
void
fc_log_note_error(const char *error)
{
	SpinLockAcquire(&fc_log->error_lock);
	strlcpy(fc_log->last_error, error, sizeof(fc_log->last_error));
	SpinLockRelease(&fc_log->error_lock);
}

void
fc_log_clear_failing(void)
{
	pg_atomic_write_u32(&fc_log->failing, 0);
}

/* ---- statistics ---- */

void
fc_log_stats_get(FcLogStats *stats)
{
	memset(stats, 0, sizeof(FcLogStats));
	stats->insert_lsn = pg_atomic_read_u64(&fc_log->insert_lsn);
	stats->flush_lsn = pg_atomic_read_u64(&fc_log->flushed_lsn);
	for (int i = 0; i < fc_log->nprocs; i++)
	{
		FcLogProc  *p = &fc_log->procs[i].proc;

		for (int k = 0; k <= FC_REC_KIND_MAX; k++)
			stats->records[k] += p->records[k];
		stats->bytes += p->bytes;
		stats->commit_waits += p->commit_waits;
		stats->commit_wait_us += p->commit_wait_us;
		stats->buffer_full_waits += p->buffer_full_waits;
	}
	for (int k = 0; k <= FC_REC_KIND_MAX; k++)
		stats->records[k] -= fc_log->reset_base[k];
	stats->bytes -= fc_log->reset_base[FC_REC_KIND_MAX + 1];
	stats->commit_waits -= fc_log->reset_base[FC_REC_KIND_MAX + 2];
	stats->commit_wait_us -= fc_log->reset_base[FC_REC_KIND_MAX + 3];
	stats->buffer_full_waits -= fc_log->reset_base[FC_REC_KIND_MAX + 4];
	stats->flushes = fc_log->flushes - fc_log->reset_base[FC_REC_KIND_MAX + 5];
	stats->backend_flushes = fc_log->backend_flushes - fc_log->reset_base[FC_REC_KIND_MAX + 6];
	stats->write_errors = fc_log->write_errors;
	stats->failing = pg_atomic_read_u32(&fc_log->failing) != 0;
	SpinLockAcquire(&fc_log->error_lock);
	strlcpy(stats->last_error, fc_log->last_error, sizeof(stats->last_error));
	SpinLockRelease(&fc_log->error_lock);
}

/* CALL records appended since the server started (not reset with the stats). */
uint64
fc_log_calls_logged(void)
{
	uint64		calls = 0;

	for (int i = 0; i < fc_log->nprocs; i++)
		calls += fc_log->procs[i].proc.records[FC_REC_CALL];
	return calls;
}

/* Counters are never written by two processes: reset by remembering a base. */
void
fc_log_stats_reset(void)
{
	FcLogStats	now;

	memset(fc_log->reset_base, 0, sizeof(fc_log->reset_base));
	fc_log_stats_get(&now);
	for (int k = 0; k <= FC_REC_KIND_MAX; k++)
		fc_log->reset_base[k] = now.records[k];
	fc_log->reset_base[FC_REC_KIND_MAX + 1] = now.bytes;
	fc_log->reset_base[FC_REC_KIND_MAX + 2] = now.commit_waits;
	fc_log->reset_base[FC_REC_KIND_MAX + 3] = now.commit_wait_us;
	fc_log->reset_base[FC_REC_KIND_MAX + 4] = now.buffer_full_waits;
	fc_log->reset_base[FC_REC_KIND_MAX + 5] = now.flushes;
	fc_log->reset_base[FC_REC_KIND_MAX + 6] = now.backend_flushes;
}
