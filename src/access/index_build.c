/*-------------------------------------------------------------------------
 *
 * index_build.c
 *	  Feeding CREATE INDEX / REINDEX from a fastckpt table, and checking
 *	  a concurrent build's index against it.
 *
 * Every slot has exactly one entry per index, built from its latest
 * settled version: in-place updates never change indexed columns, so all
 * versions of a slot agree on them -- except for a new index on a column
 * that was updated in place while older versions are still needed.  For
 * that case the build reports a "broken HOT chain", and PostgreSQL keeps
 * the index away from transactions whose snapshots are older than the build
 * (pg_index.indcheckxmin), as it does for heap.  A concurrent build
 * (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY) indexes what its
 * snapshot sees instead, and its validation pass adds what that missed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/rel.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "recovery/gate.h"
#include "store/table_store.h"

/*
 * Startup recovery rebuilds indexes beside prepared transactions, whose
 * locks it does not wait for: a row one of them inserted has no settled
 * version, and is indexed as heap indexes an insert in progress.  Anyone
 * else's build waits for the writers first.
 */
static bool
fc_prepared_insert_version(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	if (!fc_in_recovery_worker || !TransactionIdIsInProgress(hdr->xmin))
		return false;
	fc_live_version(hdr, live, out);
	return true;
}

double
fc_index_build_range_scan(Relation table_rel, Relation index_rel,
						  IndexInfo *index_info, bool allow_sync,
						  bool anyvisible, bool progress,
						  BlockNumber start_blockno, BlockNumber numblocks,
						  IndexBuildCallback callback, void *callback_state,
						  TableScanDesc scan)
{
	FcTable    *tbl;
	GlobalVisState *vistest = GlobalVisTestFor(table_rel);
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	ExprState  *predicate;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	double		reltuples = 0;
	FcScanDesc *pscan = (FcScanDesc *) scan;
	ParallelBlockTableScanDesc pbscan = NULL;
	int64		blocks_total;
	Snapshot	snapshot = NULL;
	bool		own_snapshot = false;
	uint64		next,
				end;

	/*
	 * Not from a table recovery is still filling: a CREATE INDEX let
	 * through after its lock wait (fc_gate_wait_quietly) would miss rows.
	 * Recovery's own index rebuild does not wait.
	 */
	fc_gate_wait(table_rel);
	tbl = fc_table_for_rel(table_rel);
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = table_slot_create(table_rel, NULL);
	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);

	/*
	 * A concurrent build runs beside writers: index what an MVCC snapshot
	 * sees, as heap does, and leave the rest to the validation pass.  Latest
	 * versions would count a row twice in a unique check when its mover
	 * commits between the reads of its old and its new slot.
	 */
	if (index_info->ii_Concurrent && !anyvisible)
	{
		if (scan != NULL)
			snapshot = scan->rs_snapshot;
		else
		{
			snapshot = RegisterSnapshot(GetTransactionSnapshot());
			own_snapshot = true;
		}
	}

	if (pscan != NULL && scan->rs_parallel != NULL)
		next = end = 0;			/* ranges come from the parallel scan */
	else
	{
		uint64		nslots = fc_table_nslots(tbl);

		next = (uint64) start_blockno * FC_SLOTS_PER_BLOCK;
		end = (numblocks == InvalidBlockNumber) ? nslots :
			Min(nslots, (uint64) (start_blockno + numblocks) * FC_SLOTS_PER_BLOCK);
	}
	/* pg_stat_progress_create_index counts the virtual blocks scanned */
	if (pscan != NULL && scan->rs_parallel != NULL)
		pbscan = (ParallelBlockTableScanDesc) scan->rs_parallel;
	blocks_total = pbscan != NULL ? pbscan->phs_nblocks :
		(end - Min(next, end) + FC_SLOTS_PER_BLOCK - 1) / FC_SLOTS_PER_BLOCK;
	if (progress)
		pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL, blocks_total);

	for (;;)
	{
		if (next >= end)
		{
			if (pscan == NULL || scan->rs_parallel == NULL ||
				!fc_parallel_next_block(pscan))
				break;
			next = pscan->next_slot;
			end = pscan->end_slot;
			continue;
		}

		{
			uint64		slotno = next++;
			LWLock	   *lock = fc_slot_lock(tbl, slotno);
			char	   *sp = fc_slot_ptr(tbl, slotno);
			FcSlotHeader *hdr = (FcSlotHeader *) sp;
			FcVisible	v;
			bool		index_it = false;
			bool		alive = false;

			CHECK_FOR_INTERRUPTS();
			if (progress && slotno % FC_SLOTS_PER_BLOCK == 0)
				pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_DONE, pbscan != NULL ?
											 Min(pg_atomic_read_u64(&pbscan->phs_nallocated),
												 pbscan->phs_nblocks) :
											 slotno / FC_SLOTS_PER_BLOCK - start_blockno);
			/* recovery's rebuild of a large table does not outlive the postmaster */
			if (fc_in_recovery_worker && slotno % 4096 == 0)
				fc_exit_if_orphaned();
			LWLockAcquire(lock, LW_SHARED);
			if (anyvisible)
			{
				/*
				 * BRIN summarizing a range beside writers: an insert still in
				 * progress found the range unsummarized and left the index
				 * alone, so its row must be in the summary (an aborted one
				 * only widens it).
				 */
				index_it = alive = (hdr->flags & FC_SLOT_USED) &&
					!(hdr->flags & FC_SLOT_DEAD);
				if (index_it)
				{
					fc_live_version(hdr, fc_pp_live(sp, &tbl->layout), &v);
					fc_store_version(slot, table_rel, slotno, &v);
				}
			}
			else if (snapshot != NULL)
			{
				index_it = alive =
					fc_visible_version(hdr, fc_pp_live(sp, &tbl->layout), snapshot, &v);
				if (index_it)
					fc_store_version(slot, table_rel, slotno, &v);
			}
			else if ((hdr->flags & FC_SLOT_USED) && !fc_slot_dead_to_all(hdr, vistest) &&
					 (fc_latest_version(hdr, fc_pp_live(sp, &tbl->layout), &v) ||
					  fc_prepared_insert_version(hdr, fc_pp_live(sp, &tbl->layout), &v)))
			{
				index_it = true;
				/*
				 * Deleted or moved away by a committed transaction, or by
				 * this one (a REINDEX after its UPDATE): indexed, but left
				 * out of unique checks, as heap treats a tuple it deleted.
				 */
				alive = !(v.is_live && fc_xmax_live(hdr));
				if (hdr->undo != NULL)
					index_info->ii_BrokenHotChain = true;
				fc_store_version(slot, table_rel, slotno, &v);
			}
			LWLockRelease(lock);
			if (!index_it)
				continue;

			MemoryContextReset(econtext->ecxt_per_tuple_memory);
			if (predicate != NULL && !ExecQual(predicate, econtext))
				continue;
			FormIndexDatum(index_info, slot, estate, values, isnull);
			callback(index_rel, &slot->tts_tid, values, isnull, alive, callback_state);
			if (alive)
				reltuples += 1;
		}
	}

	if (progress)
		pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_DONE, blocks_total);
	/* like heap, the build owns a scan it was handed (parallel builds) */
	if (scan != NULL)
		table_endscan(scan);
	if (own_snapshot)
		UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
	return reltuples;
}

/*
 * CREATE INDEX CONCURRENTLY and REINDEX CONCURRENTLY, second pass: index
 * every row the reference snapshot sees that the first pass (a build from
 * latest versions, while writers that had not seen the index yet were
 * waited for) left out.  The index's TIDs come sorted, and a serial scan
 * returns slots in TID order, so the two merge.  No row needs an entry
 * under another TID: an update that changes an indexed column moves the
 * row to a new slot, and every writer since the index's catalog entry
 * knows of it (PostgreSQL waited for the others before the first pass).
 */
void
fc_index_validate_scan(Relation table_rel, Relation index_rel,
					   IndexInfo *index_info, Snapshot snapshot,
					   ValidateIndexState *state)
{
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	TupleTableSlot *slot = table_slot_create(table_rel, NULL);
	ExprState  *predicate;
	TableScanDesc scan;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ItemPointerData indexed;
	bool		index_done = false;
	bool		have_indexed = false;

	econtext->ecxt_scantuple = slot;
	predicate = ExecPrepareQual(index_info->ii_Predicate, estate);
	scan = table_beginscan_strat(table_rel, snapshot, 0, NULL, true, false);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		state->htups += 1;

		/* skip the index's TIDs below this row's */
		while (!index_done &&
			   (!have_indexed || ItemPointerCompare(&indexed, &slot->tts_tid) < 0))
		{
			Datum		tid_datum;
			bool		tid_isnull;

			index_done = !tuplesort_getdatum(state->tuplesort, true,
											 &tid_datum, &tid_isnull, NULL);
			if (!index_done)
			{
				itemptr_decode(&indexed, DatumGetInt64(tid_datum));
				have_indexed = true;
#ifndef USE_FLOAT8_BYVAL
				pfree(DatumGetPointer(tid_datum));
#endif
			}
		}
		if (!index_done && ItemPointerEquals(&indexed, &slot->tts_tid))
			continue;

		MemoryContextReset(econtext->ecxt_per_tuple_memory);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(index_info, slot, estate, values, isnull);
		index_insert(index_rel, values, isnull, &slot->tts_tid, table_rel,
					 index_info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
					 false, index_info);
		state->tups_inserted += 1;
	}

	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_info->ii_ExpressionsState = NIL;
	index_info->ii_PredicateState = NULL;
}
