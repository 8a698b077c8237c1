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

#include "core/log_format.h"

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
	double		seconds;
} FcReplayResult;

extern void fc_replay_log(FcReplayResult *res, uint64 start_lsn, uint64 min_csn);

#endif							/* FC_REPLAY_H */
