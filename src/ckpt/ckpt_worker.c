/*-------------------------------------------------------------------------
 *
 * ckpt_worker.c
 *	  The checkpoint writer background worker: decides when a checkpoint
 *	  runs and runs it (ckpt_write.c).
 *
 * A checkpoint runs when asked for (fastckpt_checkpoint()), when
 * pg_fastckpt.checkpoint_timeout has passed since the last one started
 * (a timed one spreads its writing over checkpoint_completion_target of
 * that), when the log written since the last one exceeds
 * pg_fastckpt.max_log_size -- or, under checkpoint_policy = adaptive,
 * SLACH's load-dependent threshold (core/ckpt_policy.c) --, when more than
 * pg_fastckpt.max_replay_calls calls were logged since (recovery runs each
 * again, which their few bytes of log do not show), and at shutdown.
 * Timed and size-triggered checkpoints are skipped while nothing commits.
 * A failed checkpoint is reported, its waiters get the error, and it is
 * retried after a second with the same swap (see fc_ckpt_swap).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>

#include "core/ckpt_policy.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/condition_variable.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "recovery/gate.h"

PGDLLEXPORT void fc_checkpointer_main(Datum arg);

/* The loop's state: static, so that it survives the longjmp of an error. */
static fc_ckpt_policy_state policy;
static TimestampTz last_start;
static TimestampTz last_sample;
static TimestampTz retry_after = 0;
static uint64 handled = 0;		/* requests answered */
static uint64 answering = 0;	/* requests the running checkpoint answers */
static uint64 last_commits;

#define FC_CKPT_POLL_MS			100L
#define FC_CKPT_RETRY_MS		1000L

void
fc_register_checkpointer(void)
{
	fc_register_static_worker(BGWORKER_SHMEM_ACCESS, "fc_checkpointer_main",
							  "pg_fastckpt checkpointer");
}

static void
fc_policy_params(fc_ckpt_policy_params *p)
{
	p->lower_bound = fc_adaptive_lower_bound_mb * 1024.0 * 1024.0;
	p->upper_bound = Max(fc_adaptive_upper_bound_mb, fc_adaptive_lower_bound_mb) * 1024.0 * 1024.0;
	p->low_watermark = fc_adaptive_low_watermark;
	p->high_watermark = fc_adaptive_high_watermark;
	p->beta = fc_adaptive_beta;
	p->alpha = fc_adaptive_alpha;
	p->peak_rate = fc_adaptive_peak_rate;
}

static void
fc_stats_set_policy(FcCkptStats *st, void *arg)
{
	const fc_ckpt_policy_state *ps = (const fc_ckpt_policy_state *) arg;

	st->threshold_bytes = ps->threshold;
	st->load = ps->load;
	st->commit_rate = ps->rate;
}

static void
fc_stats_failure(FcCkptStats *st, void *arg)
{
	st->failures++;
	strlcpy(st->last_error, (const char *) arg, sizeof(st->last_error));
	st->in_progress = false;
}

/* Not a failed checkpoint: none is attempted (fc_gate_some_database_closed). */
static void
fc_stats_note_closed(FcCkptStats *st, void *arg)
{
	strlcpy(st->last_error, (const char *) arg, sizeof(st->last_error));
}

static uint64
fc_commits_so_far(void)
{
	FcLogStats	ls;

	fc_log_stats_get(&ls);
	return ls.records[FC_REC_VALUES] + ls.records[FC_REC_CALL];
}

/*
 * While a database's tables stay closed, the log since the last checkpoint
 * grows with every commit: say so once it passes max_log_size (1 GB when
 * that is 0), and again at each doubling, so an administrator sees the
 * disk filling before it is full.
 */
static void
fc_warn_log_kept(Oid closed_db, uint64 *warned_at)
{
	FcCkptStats st;
	uint64		insert = fc_log_insert_lsn();
	uint64		limit = (uint64) (fc_max_log_size_mb > 0 ? fc_max_log_size_mb : 1024) * 1024 * 1024;
	uint64		kept;

	fc_ckpt_stats_get(&st);
	kept = insert - Min(st.last_start_lsn, insert);
	if (kept < limit || kept < *warned_at * 2)
		return;
	ereport(WARNING,
			(errmsg("pg_fastckpt: the log holds %llu MB since the last checkpoint, and grows while the fastckpt tables of database %s stay closed",
					(unsigned long long) (kept / (1024 * 1024)), fc_gate_closed_database_label(closed_db)),
			 errdetail("No checkpoint is taken, and no log segment removed, until that database's tables open or it is dropped."),
			 errhint("Fix what the server log names as the cause at startup and restart the server, or drop that database.")));
	*warned_at = kept;
}

void
fc_checkpointer_main(Datum arg)
{
	sigjmp_buf	local_sigjmp_buf;
	MemoryContext run_cxt;
	FcCkptStats st;
	Oid			closed_db;
	Oid			said_closed = InvalidOid;
	uint64		warned_at = 0;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	run_cxt = AllocSetContextCreate(TopMemoryContext, "pg_fastckpt checkpoint",
									ALLOCSET_DEFAULT_SIZES);

	/* the tables open only after recovery; so do checkpoints */
	while (!fc_gate_is_open())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FC_CKPT_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* recovery may have opened the tables meanwhile: then checkpoint first */
		if (ShutdownRequestPending && !fc_gate_is_open())
			fc_static_worker_exit();
	}
	fc_ckpt_set_writer_latch();

	/* errors in a checkpoint come back here: report, clean up, retry later */
	if (sigsetjmp(local_sigjmp_buf, 1) != 0)
	{
		ErrorData  *edata;

		error_context_stack = NULL;
		HOLD_INTERRUPTS();
		LWLockReleaseAll();
		ConditionVariableCancelSleep();
		pgstat_report_wait_end();
		AtEOXact_Files(false);
		MemoryContextSwitchTo(run_cxt);
		edata = CopyErrorData();
		EmitErrorReport();
		FlushErrorState();
		fc_ckpt_stats_update(fc_stats_failure, edata->message ? edata->message : "unknown error");
		fc_ckpt_finish_requests(answering, false);
		handled = Max(handled, answering);
		fc_ckpt_abandon_copy();
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(run_cxt);
		retry_after = GetCurrentTimestamp() + FC_CKPT_RETRY_MS * 1000;
		RESUME_INTERRUPTS();
		if (ShutdownRequestPending)
			fc_static_worker_exit();
	}
	PG_exception_stack = &local_sigjmp_buf;

	memset(&policy, 0, sizeof(policy));
	last_start = last_sample = GetCurrentTimestamp();
	last_commits = fc_commits_so_far();

	for (;;)
	{
		TimestampTz now;
		FcCkptTrigger trigger = FC_TRIGGER_KINDS;
		bool		changed;
		uint64		log_since;
		double		threshold;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FC_CKPT_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		fc_gate_forget_replayed_calls();
		now = GetCurrentTimestamp();

		/* a database's tables left closed: its commits live in the log only */
		if (fc_gate_some_database_closed(&closed_db))
		{
			if (ShutdownRequestPending)
				fc_static_worker_exit();
			if (closed_db != said_closed)
			{
				char		msg[256];

				snprintf(msg, sizeof(msg),
						 "no checkpoint is taken while the fastckpt tables of database %u stay closed",
						 closed_db);
				ereport(LOG, (errmsg("pg_fastckpt: %s; the log is kept whole", msg)));
				fc_ckpt_stats_update(fc_stats_note_closed, msg);
				said_closed = closed_db;
			}
			if (fc_ckpt_pending_requests(handled) > 0)
			{
				handled = fc_ckpt_take_requests();
				fc_ckpt_finish_requests(handled, false);
			}
			fc_warn_log_kept(closed_db, &warned_at);
			continue;
		}

		/* the adaptive policy's load sample */
		if (TimestampDifferenceExceeds(last_sample, now, fc_adaptive_window_s * 1000))
		{
			fc_ckpt_policy_params params;
			uint64		commits = fc_commits_so_far();

			fc_policy_params(&params);
			fc_ckpt_policy_sample(&policy, &params,
								  (double) (commits >= last_commits ? commits - last_commits : 0),
								  (double) (now - last_sample) / 1000000.0);
			last_commits = commits;
			last_sample = now;
		}
		if (fc_checkpoint_policy == FC_POLICY_ADAPTIVE && policy.primed)
			threshold = policy.threshold;
		else
		{
			policy.threshold = (double) fc_max_log_size_mb * 1024.0 * 1024.0;
			threshold = policy.threshold;
		}
		fc_ckpt_stats_update(fc_stats_set_policy, &policy);

		fc_ckpt_stats_get(&st);
		changed = fc_log_peek_next_csn() != st.last_csn;
		log_since = fc_log_insert_lsn() - Min(st.last_start_lsn, fc_log_insert_lsn());

		if (ShutdownRequestPending)
		{
			if (changed)
				trigger = FC_TRIGGER_SHUTDOWN;
			else
				fc_static_worker_exit();
		}
		else if (now < retry_after)
			continue;
		else if (fc_ckpt_pending_requests(handled) > 0)
			trigger = FC_TRIGGER_REQUESTED;
		else if (changed && fc_checkpoint_timeout_s > 0 &&
				 TimestampDifferenceExceeds(last_start, now, fc_checkpoint_timeout_s * 1000))
			trigger = FC_TRIGGER_TIMED;
		else if (changed && threshold > 0 && (double) log_since >= threshold)
			trigger = FC_TRIGGER_SIZE;
		else if (changed && fc_max_replay_calls > 0 &&
				 fc_ckpt_calls_since_checkpoint() >= (uint64) fc_max_replay_calls)
			trigger = FC_TRIGGER_SIZE;	/* the log's calls, not its bytes */
		if (trigger == FC_TRIGGER_KINDS)
			continue;

		/* the timer runs from one start to the next, as PostgreSQL's */
		last_start = now;
		answering = fc_ckpt_take_requests();
		MemoryContextSwitchTo(run_cxt);
		(void) fc_ckpt_run(trigger, trigger == FC_TRIGGER_SHUTDOWN);
		MemoryContextSwitchTo(TopMemoryContext);
		MemoryContextReset(run_cxt);
		fc_ckpt_finish_requests(answering, true);
		handled = answering;
		if (trigger == FC_TRIGGER_SHUTDOWN)
			fc_static_worker_exit();
	}
}
