/*-------------------------------------------------------------------------
 *
 * replay.h
 *	  Rebuilding the store from the logical log at startup.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_REPLAY_H
#define FC_REPLAY_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "port/atomics.h"

#include "core/log_format.h"
#include "store/slot.h"

#define FC_MAX_REPLAY_PARTS		64	/* pg_fastckpt.recovery_workers' maximum */

/* A record the database-connected worker replays, in CSN order */
typedef struct FcSerialEntry
{
	uint64		csn;
	uint64		lsn;
} FcSerialEntry;

/*
 * One database's records from its first CALL record on: its CALL and
 * VALUES records, sorted by CSN, replayed one by one (call_replay.c).
 */
typedef struct FcSerialDb
{
	Oid			dbid;
	uint64		first_call_csn;
	uint64		nentries;
	FcSerialEntry *entries;
} FcSerialDb;

typedef struct FcReplayResult
{
	uint64		start_lsn;
	uint64		end_lsn;
	uint64		next_csn;
	uint64		records[FC_REC_KIND_MAX + 1];	/* valid records read */
	uint64		records_applied;
	uint64		records_skipped;	/* aborted or not committed */
	uint64		rows_applied;
	uint64		rows_skipped;
	uint64		tables_created;
	int			workers;		/* processes that applied rows */
	double		seconds;
	List	   *serial;			/* FcSerialDb of databases with CALL records */
	uint64		max_call_csn;	/* newest CALL record replayed, or 0 */
} FcReplayResult;

/* What one partition's pass applied */
typedef struct FcReplayPart
{
	uint64		records_applied;	/* counted by partition 0 only */
	uint64		records_skipped;
	uint64		rows_applied;
	uint64		rows_skipped;
} FcReplayPart;

/*
 * The row pass, shared by the leader with its replay workers (in dynamic
 * shared memory): which records count, and who did which partition.
 */
typedef struct FcReplayPlan
{
	uint64		start_lsn;
	uint64		end_lsn;		/* first byte past the last valid record */
	uint64		min_csn;		/* records below it are in the checkpoint */
	uint64		phase;			/* ping-pong phase rows are installed in */
	uint32		nparts;
	pg_atomic_uint32 next_part; /* next partition to claim */
	bool		done[FC_MAX_REPLAY_PARTS];
	FcReplayPart parts[FC_MAX_REPLAY_PARTS];
	uint64		nskip;
	uint32		nserial;		/* databases replayed serially from a CSN on */
	uint64		words[FLEXIBLE_ARRAY_MEMBER];	/* nskip sorted CSNs that do
												 * not count, then nserial
												 * (database, first CALL CSN) */
} FcReplayPlan;

#define FC_PLAN_SKIP(plan)		((plan)->words)
#define FC_PLAN_SERIAL(plan)	((plan)->words + (plan)->nskip)

/* replay.c */
extern void fc_replay_put_image(FcTable *tbl, uint64 slotno, const char *image,
								uint32 len, uint64 phase, uint64 link);
extern void fc_replay_log(FcReplayResult *res, uint64 start_lsn, uint64 min_csn);
extern void fc_replay_rows(const FcReplayPlan *plan, uint32 part, FcReplayPart *counts,
						   bool report);

/* replay_workers.c */
extern FcReplayPlan *fc_replay_plan_create(uint64 nwords);
extern int	fc_replay_plan_run(FcReplayPlan *plan);
extern void fc_replay_plan_destroy(FcReplayPlan *plan);

#endif							/* FC_REPLAY_H */
