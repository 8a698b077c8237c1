/*-------------------------------------------------------------------------
 *
 * worker_slots.c
 *	  Waiting for a background worker slot that startup recovery cannot do
 *	  without (a database's index rebuild, its call replay).
 *
 * Subscriptions' apply workers come from the same pool (max_worker_processes)
 * and keep their slots for the server's life; the logical replication
 * launcher starts them while recovery is still loading.  When they hold
 * every free slot, recovery would wait for ever and the fastckpt tables
 * stay closed, and ALTER SUBSCRIPTION ... DISABLE cannot help, since catalog
 * changes wait for recovery too.  So after a while without a slot one of
 * them is terminated, as pg_terminate_backend() would: the launcher starts
 * it again after wal_retrieve_retry_interval, and its subscription resumes
 * where it stopped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "recovery/gate.h"
#include "recovery/worker_slots.h"

/* how long recovery waits for a slot before it frees one */
#define FC_SLOT_FREE_AFTER_MS	5000
/*
 * After freeing one, how long it asks often: the launcher, woken as its
 * worker exits, asks for the slot too.
 */
#define FC_SLOT_EAGER_MS		3000

/* Send SIGTERM to one logical replication worker; its pid, or 0. */
static int
fc_terminate_replication_worker(void)
{
	for (uint32 i = 0; i < ProcGlobal->allProcCount; i++)
	{
		int			pid = ProcGlobal->allProcs[i].pid;
		const char *type;

		if (pid == 0 || pid == MyProcPid)
			continue;
		type = GetBackgroundWorkerTypeByPid(pid);
		if (type == NULL || strcmp(type, "logical replication worker") != 0)
			continue;
		if (kill(pid, SIGTERM) == 0)
			return pid;
	}
	return 0;
}

/*
 * Called after an attempt to start a worker recovery needs (for purpose,
 * "for recovery of database 5") failed for want of a slot: wait before the
 * next attempt, freeing a slot once recovery has waited long enough.
 */
void
fc_worker_slot_wait(FcSlotWait *wait, const char *purpose)
{
	TimestampTz now = GetCurrentTimestamp();
	long		wait_ms = 1000;

	if (wait->since == 0)
		wait->since = now;
	if (TimestampDifferenceExceeds(wait->freed_at != 0 ? wait->freed_at : wait->since,
								   now, FC_SLOT_FREE_AFTER_MS))
	{
		int			pid = fc_terminate_replication_worker();

		if (pid != 0)
		{
			wait->freed_at = now;
			ereport(LOG,
					(errmsg("pg_fastckpt: terminating logical replication worker (process %d) to free a background worker slot for startup recovery",
							pid),
					 errdetail("No slot has been free for %ld ms; subscriptions' workers keep theirs, and the fastckpt tables stay closed until recovery gets one. The subscription resumes when the launcher starts its worker again.",
							   TimestampDifferenceMilliseconds(wait->since, now)),
					 errhint("Raise max_worker_processes to leave a slot for pg_fastckpt's recovery beyond max_logical_replication_workers.")));
		}
	}
	if (wait->freed_at != 0 &&
		!TimestampDifferenceExceeds(wait->freed_at, now, FC_SLOT_EAGER_MS))
		wait_ms = 5;
	else
		ereport(LOG,
				(errmsg("pg_fastckpt: no background worker slot free %s, retrying", purpose),
				 errhint("Raise max_worker_processes.")));
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 wait_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	fc_recovery_exit_if_shutdown();
}
