/*-------------------------------------------------------------------------
 *
 * replay_workers.c
 *	  Startup: apply the log's rows with several processes at once.
 *
 * The leader puts the plan (range of the log, records that do not count,
 * one entry per partition) in a dynamic shared memory segment and starts
 * pg_fastckpt.recovery_workers - 1 replay workers (none for a log shorter
 * than pg_fastckpt.min_parallel_replay_size: every process reads the whole
 * log, and a new process first maps the arena pages it touches, which
 * costs more than a short log's rows).  Every process, the
 * leader included, claims partitions one at a time and applies their rows
 * (replay.c).  A partition whose worker never started is claimed by
 * someone else; one whose worker stopped part way through is done again
 * by the leader, which is safe because applying a row twice leaves the
 * slot as applying it once (per slot the largest CSN wins).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"

#include "pg_fastckpt.h"
#include "recovery/attempts.h"
#include "recovery/gate.h"
#include "recovery/replay.h"

PGDLLEXPORT void fc_replay_worker_main(Datum arg);

static dsm_segment *fc_plan_seg = NULL;

FcReplayPlan *
fc_replay_plan_create(uint64 nwords)
{
	Size		size = add_size(offsetof(FcReplayPlan, words), mul_size(nwords, sizeof(uint64)));
	FcReplayPlan *plan;

	Assert(fc_plan_seg == NULL);
	fc_plan_seg = dsm_create(size, 0);
	plan = (FcReplayPlan *) dsm_segment_address(fc_plan_seg);
	memset(plan, 0, offsetof(FcReplayPlan, words));
	plan->nparts = Min(Max(fc_recovery_workers, 1), FC_MAX_REPLAY_PARTS);
	pg_atomic_init_u32(&plan->next_part, 0);
	return plan;
}

void
fc_replay_plan_destroy(FcReplayPlan *plan)
{
	Assert(fc_plan_seg != NULL && dsm_segment_address(fc_plan_seg) == plan);
	dsm_detach(fc_plan_seg);
	fc_plan_seg = NULL;
}

/* Claim and apply partitions until none is left. */
static void
fc_replay_claim_parts(FcReplayPlan *plan, bool report)
{
	uint32		part;

	while ((part = pg_atomic_fetch_add_u32(&plan->next_part, 1)) < plan->nparts)
	{
		FcReplayPart counts;

		fc_replay_rows(plan, part, &counts, report);
		plan->parts[part] = counts;
		pg_write_barrier();
		plan->done[part] = true;
	}
}

void
fc_replay_worker_main(Datum arg)
{
	dsm_segment *seg;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	fc_attempt_join_recovery();
	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		proc_exit(1);			/* the leader gave up already */
	fc_replay_claim_parts((FcReplayPlan *) dsm_segment_address(seg), false);
	dsm_detach(seg);
	proc_exit(0);
}

/*
 * Apply the plan's rows with every replay worker we can get.  Returns the
 * number of processes that took part, the leader included.
 */
int
fc_replay_plan_run(FcReplayPlan *plan)
{
	BackgroundWorkerHandle *handles[FC_MAX_REPLAY_PARTS];
	int			wanted = (int) plan->nparts - 1;
	int			started = 0;

	/* too little to share out: no worker is worth starting */
	if (plan->end_lsn - plan->start_lsn < (uint64) fc_min_parallel_replay_mb * 1024 * 1024 ||
		plan->end_lsn == plan->start_lsn)
		wanted = 0;
	for (int i = 0; i < wanted; i++)
	{
		char		name[BGW_MAXLEN];

		snprintf(name, sizeof(name), "pg_fastckpt replay worker %d", i + 1);
		handles[started] = fc_start_dynamic_worker(BGWORKER_SHMEM_ACCESS, "fc_replay_worker_main",
												   "pg_fastckpt replay worker", name,
												   UInt32GetDatum(dsm_segment_handle(fc_plan_seg)));
		if (handles[started] != NULL)
			started++;
	}
	if (started < wanted)
		ereport(LOG,
				(errmsg("pg_fastckpt: replaying the log with %d processes instead of %d: no free background worker slot",
						started + 1, wanted + 1),
				 errhint("Raise max_worker_processes.")));

	fc_replay_claim_parts(plan, true);
	for (int i = 0; i < started; i++)
		(void) WaitForBackgroundWorkerShutdown(handles[i]);
	pg_read_barrier();
	fc_recovery_exit_if_shutdown();

	for (uint32 part = 0; part < plan->nparts; part++)
	{
		if (plan->done[part])
			continue;
		ereport(LOG,
				(errmsg("pg_fastckpt: a replay worker stopped before it finished partition %u of the log's rows; the leader applies it again",
						part)));
		fc_replay_rows(plan, part, &plan->parts[part], true);
		plan->done[part] = true;
	}
	return started + 1;
}
