/*-------------------------------------------------------------------------
 *
 * ckpt_shared.c
 *	  Checkpoint state in shared memory: the phase swap, the transactions
 *	  still in doubt at a swap, requests from SQL, and the figures.
 *
 * A transaction takes its CSN and installs its rows into the current
 * shadow images under the install latch held shared, at PRE_COMMIT.  It
 * may still fail after that (then it puts the committed images back), and
 * if it also wrote WAL its commit record comes later.  So a checkpoint at
 * S first waits until every transaction with a CSN below S has finished,
 * one way or the other: only then are the previous images exactly the
 * effects of CSN < S.  Each backend publishes its CSN from PRE_COMMIT to
 * the end of its transaction for that wait.  A transaction whose outcome
 * PostgreSQL's commit log decides publishes its xid too: once that says
 * committed nothing can undo it, so a commit held afterwards (synchronous
 * replication waiting for a standby) does not hold checkpoints up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/twophase.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "store/slot.h"
#include "txn/write_set.h"

/* a transaction between its CSN and its end (fc_ckpt_publish_csn) */
typedef struct FcInDoubt
{
	pg_atomic_uint64 csn;		/* 0: none */
	pg_atomic_uint32 xid;		/* decided by the commit log, or invalid */
} FcInDoubt;

typedef struct FcCkptShared
{
	slock_t		mutex;			/* protects everything but in_doubt */
	uint64		requested;		/* requests made so far */
	uint64		answered;		/* requests a finished checkpoint answered */
	bool		answer_ok;		/* how the last one ended */
	ConditionVariable answered_cv;
	Latch	   *writer_latch;
	/* a swap whose checkpoint is not installed yet: retried, never redone */
	bool		swap_pending;
	uint64		swap_csn;
	uint64		swap_lsn;
	uint64		swap_phase;
	uint64		swap_calls;		/* fc_log_calls_logged() at the swap */
	FcCkptStats stats;
	pg_atomic_uint64 last_call_csn; /* newest CALL record's CSN, or 0 */
	pg_atomic_uint64 calls_base;	/* fc_log_calls_logged() at the installed
									 * checkpoint's swap, modulo 2^64 */
	int			nprocs;
	FcInDoubt	in_doubt[FLEXIBLE_ARRAY_MEMBER];	/* by pgprocno */
} FcCkptShared;

static FcCkptShared *fc_ckpt = NULL;
static bool fc_published = false;

Size
fc_ckpt_shmem_size(void)
{
	return add_size(offsetof(FcCkptShared, in_doubt),
					mul_size(sizeof(FcInDoubt), fc_total_procs()));
}

void
fc_ckpt_shmem_init(void)
{
	bool		found;

	fc_ckpt = ShmemInitStruct("pg_fastckpt checkpointer", fc_ckpt_shmem_size(), &found);
	if (!found)
	{
		memset(fc_ckpt, 0, offsetof(FcCkptShared, in_doubt));
		SpinLockInit(&fc_ckpt->mutex);
		ConditionVariableInit(&fc_ckpt->answered_cv);
		fc_ckpt->nprocs = fc_total_procs();
		pg_atomic_init_u64(&fc_ckpt->last_call_csn, 0);
		pg_atomic_init_u64(&fc_ckpt->calls_base, 0);
		for (int i = 0; i < fc_ckpt->nprocs; i++)
		{
			pg_atomic_init_u64(&fc_ckpt->in_doubt[i].csn, 0);
			pg_atomic_init_u32(&fc_ckpt->in_doubt[i].xid, InvalidTransactionId);
		}
	}
}

/*
 * Commit: this transaction holds CSN csn until fc_ckpt_clear_csn.  Pass
 * its top xid when its outcome is the commit log's (a commit record flushed
 * before the commit log is set), else InvalidTransactionId.
 */
void
fc_ckpt_publish_csn(uint64 csn, TransactionId decided_by)
{
	FcInDoubt  *me;

	Assert(MyProc != NULL && MyProc->pgprocno < fc_ckpt->nprocs);
	me = &fc_ckpt->in_doubt[MyProc->pgprocno];
	/* the xid before the CSN: whoever reads this CSN reads its xid */
	pg_atomic_write_u32(&me->xid, decided_by);
	pg_write_barrier();
	pg_atomic_write_u64(&me->csn, csn);
	fc_published = true;
}

/* End of transaction, after everything that could undo it. */
void
fc_ckpt_clear_csn(void)
{
	if (!fc_published)
		return;
	pg_atomic_write_u64(&fc_ckpt->in_doubt[MyProc->pgprocno].csn, 0);
	fc_published = false;
}

/*
 * The phase swap, at a point of consistency: with the install latch held
 * exclusively no commit is between taking its CSN and installing its rows.
 * Records the checkpoint's CSN S and where its replay starts: every record
 * with a CSN below S is before that position, every later one after.
 *
 * If the previous attempt swapped but did not install its checkpoint, its
 * swap is reused: the writer has taken (and tagged) some previous images
 * already, and only a retry of the same pass finds them again.  Returns
 * true for such a retry.
 */
bool
fc_ckpt_swap(uint64 *csn, uint64 *start_lsn, uint64 *phase)
{
	bool		retry;
	uint64		calls;

	SpinLockAcquire(&fc_ckpt->mutex);
	retry = fc_ckpt->swap_pending;
	*csn = fc_ckpt->swap_csn;
	*start_lsn = fc_ckpt->swap_lsn;
	*phase = fc_ckpt->swap_phase;
	SpinLockRelease(&fc_ckpt->mutex);
	if (retry)
		return true;

	/* CALL records are appended under the latch too: the count is exact */
	LWLockAcquire(fc_misc_lock(FC_LOCK_INSTALL), LW_EXCLUSIVE);
	*csn = fc_log_peek_next_csn();
	*start_lsn = fc_log_insert_lsn();
	*phase = fc_pp_flip(fc_pp_phase_ptr());
	calls = fc_log_calls_logged();
	fc_ckpt_pause_point(FC_PAUSE_SWAP);
	LWLockRelease(fc_misc_lock(FC_LOCK_INSTALL));

	SpinLockAcquire(&fc_ckpt->mutex);
	fc_ckpt->swap_pending = true;
	fc_ckpt->swap_csn = *csn;
	fc_ckpt->swap_lsn = *start_lsn;
	fc_ckpt->swap_phase = *phase;
	fc_ckpt->swap_calls = calls;
	SpinLockRelease(&fc_ckpt->mutex);
	return false;
}

/* The checkpoint of the pending swap is installed. */
void
fc_ckpt_swap_done(void)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	fc_ckpt->swap_pending = false;
	pg_atomic_write_u64(&fc_ckpt->calls_base, fc_ckpt->swap_calls);
	SpinLockRelease(&fc_ckpt->mutex);
}

/*
 * Whether the transaction of in_doubt slot i, holding CSN held, can no
 * longer change its rows.  The xid read after the CSN is that
 * transaction's or a later one's; a later one means this one has ended.
 */
static bool
fc_ckpt_decided(int i)
{
	TransactionId xid;

	pg_read_barrier();
	xid = pg_atomic_read_u32(&fc_ckpt->in_doubt[i].xid);
	return TransactionIdIsNormal(xid) && TransactionIdDidCommit(xid);
}

/*
 * Wait until no transaction with a CSN below csn is still in doubt.  A
 * commit waiting for a log that cannot be written stays in doubt for as
 * long as the outage lasts: then fail, as the wait for the log itself does
 * (fc_wait_log_flushed), rather than hang unseen; the next attempt waits
 * again.
 */
void
fc_ckpt_wait_in_doubt(uint64 csn)
{
	TimestampTz start = GetCurrentTimestamp();
	int			noted_s = 0;

	for (int i = 0; i < fc_ckpt->nprocs; i++)
	{
		for (;;)
		{
			uint64		held = pg_atomic_read_u64(&fc_ckpt->in_doubt[i].csn);
			long		waited_ms;

			if (held == 0 || held >= csn || fc_ckpt_decided(i))
				break;
			/* nothing bounds this wait but the commit: say who holds it */
			waited_ms = TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
			if (waited_ms >= (noted_s + FC_CKPT_IN_DOUBT_NOTE_S) * 1000L)
			{
				noted_s = waited_ms / 1000;
				ereport(LOG,
						(errmsg("pg_fastckpt: the checkpoint at CSN %llu has waited %d s for the commit with CSN %llu (process %d) to end",
								(unsigned long long) csn, noted_s,
								(unsigned long long) held, ProcGlobal->allProcs[i].pid),
						 errdetail("A checkpoint waits until every commit before it has ended; that process has logged its rows and has not finished committing."),
						 errhint("See what the process waits for in pg_stat_activity.")));
			}
			if (fc_log_is_failing() &&
				TimestampDifferenceExceeds(start, GetCurrentTimestamp(), FC_CKPT_FLUSH_WAIT_MS))
				ereport(ERROR,
						(errcode(ERRCODE_IO_ERROR),
						 errmsg("the fastckpt checkpoint at CSN %llu cannot be taken: the commit with CSN %llu (process %d) waits for the fastckpt log, which cannot be written",
								(unsigned long long) csn, (unsigned long long) held,
								ProcGlobal->allProcs[i].pid),
						 errdetail("A checkpoint waits until every commit before it has ended; fastckpt_stat_log says why the log cannot be written."),
						 errhint("Free space on (or repair) the device holding pg_fastckpt/log; the checkpoint is retried.")));
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}

/* Writer: the requests this checkpoint answers (all made so far). */
uint64
fc_ckpt_take_requests(void)
{
	uint64		upto;

	SpinLockAcquire(&fc_ckpt->mutex);
	upto = fc_ckpt->requested;
	fc_ckpt->writer_latch = MyLatch;
	SpinLockRelease(&fc_ckpt->mutex);
	return upto;
}

/* Writer: requests made after the ones it has handled. */
uint64
fc_ckpt_pending_requests(uint64 handled)
{
	uint64		requested;

	SpinLockAcquire(&fc_ckpt->mutex);
	requested = fc_ckpt->requested;
	fc_ckpt->writer_latch = MyLatch;
	SpinLockRelease(&fc_ckpt->mutex);
	return requested - handled;
}

void
fc_ckpt_finish_requests(uint64 upto, bool ok)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	if (upto > fc_ckpt->answered)
		fc_ckpt->answered = upto;
	fc_ckpt->answer_ok = ok;
	SpinLockRelease(&fc_ckpt->mutex);
	ConditionVariableBroadcast(&fc_ckpt->answered_cv);
}

void
fc_ckpt_set_writer_latch(void)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	fc_ckpt->writer_latch = MyLatch;
	SpinLockRelease(&fc_ckpt->mutex);
}

void
fc_ckpt_stats_get(FcCkptStats *stats)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	*stats = fc_ckpt->stats;
	SpinLockRelease(&fc_ckpt->mutex);
}

/* Writer: change the figures (fn runs under a spinlock: no calls out). */
void
fc_ckpt_stats_update(void (*fn) (FcCkptStats *stats, void *arg), void *arg)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	fn(&fc_ckpt->stats, arg);
	SpinLockRelease(&fc_ckpt->mutex);
}

static void
fc_count_pause(FcCkptStats *stats, void *arg)
{
	stats->pause_hits[*(FcCkptPausePoint *) arg]++;
}

/*
 * Testing only: stop here for pg_fastckpt.test_checkpoint_pause_ms, so a
 * crash test can kill the server at this very point.  The LOG line and
 * the counter prove the point was reached.
 */
void
fc_ckpt_pause_point(FcCkptPausePoint point)
{
	static const char *const names[] = {
		"none", "swap", "chunk", "install", "truncate", "load", "rebuild",
		"prepare", "commit_prepared"
	};
	TimestampTz end;
	TimestampTz now;

	if (fc_test_checkpoint_pause != point || fc_test_checkpoint_pause_ms <= 0)
		return;
	fc_ckpt_stats_update(fc_count_pause, &point);
	ereport(LOG,
			(errmsg("pg_fastckpt: test pause at checkpoint point \"%s\" for %d ms",
					names[point], fc_test_checkpoint_pause_ms)));
	/* a signal cuts pg_usleep short: sleep out the whole pause */
	end = GetCurrentTimestamp() + (TimestampTz) fc_test_checkpoint_pause_ms * 1000;
	while ((now = GetCurrentTimestamp()) < end)
	{
		/* no pause outlives the postmaster (a crash test's kill -9) */
		fc_exit_if_orphaned();
		/* a loader worker dies on SIGTERM here, as it would when busy */
		if (point == FC_PAUSE_LOAD)
			CHECK_FOR_INTERRUPTS();
		/* the checkpoint writer's pause ends early once a reload lifts it */
		else if (point <= FC_PAUSE_TRUNCATE && ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			if (fc_test_checkpoint_pause != point)
				break;
		}
		pg_usleep((long) Min(end - now, 100000));
	}
}

/* ---- SQL: fastckpt_checkpoint(wait boolean) ---- */

PG_FUNCTION_INFO_V1(fastckpt_checkpoint);

/*
 * No checkpoint is ever taken while startup recovery has given up (the
 * checkpoint writer waits for the tables to open): say so, never wait.
 */
static void
fc_ckpt_error_if_closed(void)
{
	char		reason[256];
	Oid			closed_db;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errdetail("pg_fastckpt takes no checkpoints during recovery: a standby holds no fastckpt tables."),
				 errhint("Take fastckpt checkpoints on the primary.")));
	if (fc_gate_some_database_closed(&closed_db))
	{
		ConditionVariableCancelSleep();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no fastckpt checkpoint can be taken while the fastckpt tables of database \"%s\" stay closed",
						fc_gate_database_label(closed_db)),
				 errdetail("Startup recovery could not repeat a logged call there; a checkpoint would drop the log that still holds its commits."),
				 errhint("The server log says which call. Put back what it needs and restart the server, or drop that database.")));
	}
	if (!fc_gate_failed(reason, sizeof(reason)))
		return;
	ConditionVariableCancelSleep();
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("no fastckpt checkpoint can be taken: startup recovery could not restore the fastckpt tables"),
			 errdetail("%s", reason),
			 errhint("The checkpoint files and the log under pg_fastckpt/ are left as they are; see the server log.")));
}

Datum
fastckpt_checkpoint(PG_FUNCTION_ARGS)
{
	bool		wait;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"wait\" of fastckpt_checkpoint must not be null"),
				 errhint("Pass true to wait for the checkpoint, false to only request it.")));
	wait = PG_GETARG_BOOL(0);
	if (!superuser() && !has_privs_of_role(GetUserId(), ROLE_PG_CHECKPOINT))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to request a fastckpt checkpoint"),
				 errdetail("Only superusers and roles with privileges of the \"pg_checkpoint\" role may."),
				 errhint("GRANT pg_checkpoint TO the role.")));
	fc_ckpt_request(wait);
	PG_RETURN_VOID();
}

/*
 * A CALL record with this CSN was logged: replaying it needs the catalogs
 * and storages as they were, until a checkpoint holds its effects.
 */
void
fc_ckpt_note_call(uint64 csn)
{
	uint64		cur = pg_atomic_read_u64(&fc_ckpt->last_call_csn);

	while (cur < csn &&
		   !pg_atomic_compare_exchange_u64(&fc_ckpt->last_call_csn, &cur, csn))
		;
}

/* Would replay from the last checkpoint run a call? */
bool
fc_ckpt_calls_since_last(void)
{
	uint64		call_csn = pg_atomic_read_u64(&fc_ckpt->last_call_csn);
	uint64		ckpt_csn;

	if (call_csn == 0)
		return false;
	SpinLockAcquire(&fc_ckpt->mutex);
	ckpt_csn = fc_ckpt->stats.last_seq == 0 ? 0 : fc_ckpt->stats.last_csn;
	SpinLockRelease(&fc_ckpt->mutex);
	return call_csn >= ckpt_csn;
}

/*
 * Calls a replay from the installed checkpoint would run: those logged
 * since its swap (fc_ckpt_swap_done), or, before the first checkpoint
 * since startup, also the calls recovery ran (still in the log), as
 * startup sets the base before it opens the tables.  Not counted out:
 * calls an ABORT record voids, and those PostgreSQL's commit log says did
 * not commit; replay skips them.
 */
uint64
fc_ckpt_calls_since_checkpoint(void)
{
	uint64		base = pg_atomic_read_u64(&fc_ckpt->calls_base);
	uint64		since;

	/* the base first: the counts summed after it can only be larger */
	pg_read_barrier();
	since = fc_log_calls_logged() - base;
	return since > PG_INT64_MAX ? 0 : since;
}

void
fc_ckpt_set_calls_base(uint64 base)
{
	pg_atomic_write_u64(&fc_ckpt->calls_base, base);
}

/* Count a request and wake the checkpointer; returns the request's number. */
static uint64
fc_ckpt_post_request(void)
{
	uint64		mine;
	Latch	   *latch;

	SpinLockAcquire(&fc_ckpt->mutex);
	mine = ++fc_ckpt->requested;
	latch = fc_ckpt->writer_latch;
	SpinLockRelease(&fc_ckpt->mutex);
	/* not started yet (recovery): it takes pending requests when it starts */
	if (latch != NULL)
		SetLatch(latch);
	return mine;
}

/*
 * Ask for a checkpoint without waiting, from a process that must not fail
 * (the log writer, short of space); nothing if none can be taken.
 */
void
fc_ckpt_request_quietly(void)
{
	char		closed_reason[1];
	Oid			closed_db;

	if (RecoveryInProgress() || fc_gate_failed(closed_reason, sizeof(closed_reason)) ||
		fc_gate_some_database_closed(&closed_db))
		return;
	(void) fc_ckpt_post_request();
}

/* Ask for a checkpoint; with wait, until one that started after has ended. */
void
fc_ckpt_request(bool wait)
{
	uint64		mine;
	bool		ok;
	char		error[256];

	fc_ckpt_error_if_closed();
	mine = fc_ckpt_post_request();
	if (!wait)
		return;

	ConditionVariablePrepareToSleep(&fc_ckpt->answered_cv);
	for (;;)
	{
		SpinLockAcquire(&fc_ckpt->mutex);
		if (fc_ckpt->answered >= mine)
		{
			ok = fc_ckpt->answer_ok;
			strlcpy(error, fc_ckpt->stats.last_error, sizeof(error));
			SpinLockRelease(&fc_ckpt->mutex);
			break;
		}
		SpinLockRelease(&fc_ckpt->mutex);
		/* the writer starts once recovery is done: look again now and then */
		(void) ConditionVariableTimedSleep(&fc_ckpt->answered_cv, 1000, PG_WAIT_EXTENSION);
		fc_ckpt_error_if_closed();
	}
	ConditionVariableCancelSleep();
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("fastckpt checkpoint failed: %s", error),
				 errdetail("The previous checkpoint and the log are kept; nothing is lost."),
				 errhint("Check the server log, and the free space and health of the device holding pg_fastckpt/ (an I/O error points at the device).")));
}

/* Startup: the loaded checkpoint counts as the last one taken. */
void
fc_ckpt_note_loaded(const FcCkptLoadResult *load)
{
	SpinLockAcquire(&fc_ckpt->mutex);
	fc_ckpt->stats.last_seq = load->seq;
	fc_ckpt->stats.last_csn = load->csn;
	fc_ckpt->stats.last_start_lsn = load->start_lsn;
	SpinLockRelease(&fc_ckpt->mutex);
}
