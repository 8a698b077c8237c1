/*-------------------------------------------------------------------------
 *
 * scan.c
 *	  Sequential, TID-range, parallel, bitmap, TABLESAMPLE and ANALYZE scans.
 *
 * A scan walks slot numbers; virtual block b covers slots
 * [b * FC_SLOTS_PER_BLOCK, (b + 1) * FC_SLOTS_PER_BLOCK), which is what
 * parallel scans, bitmap scans and ANALYZE's block sampling work with.
 * Each slot is read under its shared latch, and the version the snapshot
 * sees is copied out, so a long scan stays consistent while rows are
 * updated in place under it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/xact.h"
#include "access/tableam.h"
#include "access/tsmapi.h"
#include "catalog/index.h"
#include "executor/tuptable.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "storage/predicate.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "txn/read_set.h"
#include "txn/write_set.h"

/*
 * Copy the version of a slot that the snapshot sees into the executor
 * slot.  False if the row does not exist for this snapshot.
 */
bool
fc_fetch_slot_version(Relation rel, FcTable *tbl, uint64 slotno,
					  Snapshot snapshot, TupleTableSlot *slot)
{
	LWLock	   *lock = fc_slot_lock(tbl, slotno);
	char	   *sp = fc_slot_ptr(tbl, slotno);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;
	FcVisible	v;
	bool		found;

	LWLockAcquire(lock, LW_SHARED);
	found = fc_visible_version(hdr, fc_pp_live(sp, &tbl->layout), snapshot, &v);

	/*
	 * A registered call's read set takes what snapshots see.  The executor
	 * fetches a row it is about to update or delete again with SnapshotAny
	 * (to build the new row, for RETURNING): its scan noted that read, and
	 * the write itself goes to the version fetched, or fails.
	 */
	if (IsMVCCSnapshot(snapshot))
		fc_read_note_row(tbl, slotno, hdr, found ? &v : NULL, snapshot);
	fc_ssi_read(rel, slotno, hdr, found ? &v : NULL, snapshot);
	if (found)
		fc_store_version(slot, rel, slotno, &v);
	LWLockRelease(lock);
	fc_wait_read_durable();
	return found;
}

/*
 * A scan's own row fetch: into a reused buffer when rows keep going into
 * the same heap-tuple slot (the usual case), else into a fresh copy.
 */
static bool
fc_scan_fetch(FcScanDesc *scan, uint64 slotno, TupleTableSlot *slot)
{
	Relation	rel = scan->base.rs_rd;
	FcTable    *tbl = scan->tbl;
	LWLock	   *lock;
	char	   *sp;
	FcVisible	v;
	bool		found;

	if (scan->buf_slot == NULL && TTS_IS_HEAPTUPLE(slot))
		scan->buf_slot = slot;
	if (slot != scan->buf_slot)
		return fc_fetch_slot_version(rel, tbl, slotno, scan->base.rs_snapshot, slot);

	lock = fc_slot_lock(tbl, slotno);
	sp = fc_slot_ptr(tbl, slotno);
	LWLockAcquire(lock, LW_SHARED);
	found = fc_visible_version((FcSlotHeader *) sp, fc_pp_live(sp, &tbl->layout),
							   scan->base.rs_snapshot, &v);
	fc_read_note_row(tbl, slotno, (FcSlotHeader *) sp, found ? &v : NULL,
					 scan->base.rs_snapshot);
	fc_ssi_read(rel, slotno, (FcSlotHeader *) sp, found ? &v : NULL,
				scan->base.rs_snapshot);
	if (found)
		fc_store_version_buffered(slot, rel, slotno, &v, &scan->buf,
								  &scan->buf_cap, tbl->layout.image_capacity);
	LWLockRelease(lock);
	fc_wait_read_durable();
	return found;
}

TableScanDesc
fc_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
			  struct ScanKeyData *key, ParallelTableScanDesc pscan,
			  uint32 flags)
{
	FcScanDesc *scan;

	fc_gate_wait(rel);
	fc_gate_check_snapshot(rel, snapshot);
	if (nkeys > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("scan keys are not supported for fastckpt table \"%s\"",
						RelationGetRelationName(rel))));

	RelationIncrementReferenceCount(rel);
	scan = palloc0(sizeof(FcScanDesc));
	scan->base.rs_rd = rel;
	scan->base.rs_snapshot = snapshot;
	scan->base.rs_nkeys = 0;
	scan->base.rs_flags = flags;
	scan->base.rs_parallel = pscan;
	scan->tbl = fc_table_for_rel(rel);

	/*
	 * Note the read before the scan sees how many slots there are: a row
	 * inserted past that count by a writer that came earlier must then be
	 * a conflict.  A registered call that scans may miss rows inserted
	 * meanwhile; under SERIALIZABLE, a whole-table read conflicts with
	 * later inserts.
	 */
	if (unlikely(fc_read_set_active) && snapshot && IsMVCCSnapshot(snapshot))
		fc_read_note_table(scan->tbl);
	if ((flags & (SO_TYPE_SEQSCAN | SO_TYPE_SAMPLESCAN)) && snapshot != NULL)
		PredicateLockRelation(rel, snapshot);
	pg_read_barrier();

	scan->next_slot = 0;
	scan->end_slot = fc_table_nslots(scan->tbl);
	scan->cur_block = InvalidBlockNumber;
	scan->sample_nblocks = fc_blocks_of_slots(scan->end_slot);
	scan->parallel_block_valid = false;
	if (pscan != NULL)
		scan->next_slot = scan->end_slot = 0;	/* blocks come from pscan */
	if (flags & SO_TYPE_SEQSCAN)
		pgstat_count_heap_scan(rel);
	return (TableScanDesc) scan;
}

void
fc_scan_end(TableScanDesc sscan)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;

	RelationDecrementReferenceCount(sscan->rs_rd);
	if (sscan->rs_flags & SO_TEMP_SNAPSHOT)
		UnregisterSnapshot(sscan->rs_snapshot);
	pfree(scan);
}

void
fc_scan_rescan(TableScanDesc sscan, struct ScanKeyData *key, bool set_params,
			   bool allow_strat, bool allow_sync, bool allow_pagemode)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;

	scan->tbl = fc_table_for_rel(sscan->rs_rd);
	scan->next_slot = 0;
	scan->end_slot = fc_table_nslots(scan->tbl);
	scan->cur_block = InvalidBlockNumber;
	scan->sample_nblocks = fc_blocks_of_slots(scan->end_slot);
	scan->parallel_block_valid = false;
	scan->started = false;
	if (sscan->rs_parallel != NULL)
		scan->next_slot = scan->end_slot = 0;
}

/* Next block of a parallel scan; false when the scan is done. */
bool
fc_parallel_next_block(FcScanDesc *scan)
{
	ParallelBlockTableScanDesc pbscan =
	(ParallelBlockTableScanDesc) scan->base.rs_parallel;
	ParallelBlockTableScanWorker pbwork;
	BlockNumber block;

	if (scan->pwork == NULL)
	{
		scan->pwork = palloc0(sizeof(ParallelBlockTableScanWorkerData));
		table_block_parallelscan_startblock_init(scan->base.rs_rd, scan->pwork, pbscan);
	}
	pbwork = scan->pwork;
	block = table_block_parallelscan_nextpage(scan->base.rs_rd, pbwork, pbscan);
	if (block == InvalidBlockNumber)
		return false;
	scan->next_slot = (uint64) block * FC_SLOTS_PER_BLOCK;
	scan->end_slot = Min(scan->next_slot + FC_SLOTS_PER_BLOCK,
						 fc_table_nslots(scan->tbl));
	return true;
}

/*
 * Serial scans keep a position (the slot last returned) so they can move
 * either way, as cursors require; parallel scans only move forward.
 */
static bool
fc_scan_serial(FcScanDesc *scan, ScanDirection direction, TupleTableSlot *slot)
{
	int64		lo = (int64) scan->next_slot;
	int64		hi = (int64) scan->end_slot;
	int64		s;

	if (ScanDirectionIsNoMovement(direction))
	{
		/* refetch the current row, if there is one */
		if (scan->started && scan->cur >= lo && scan->cur < hi &&
			fc_scan_fetch(scan, (uint64) scan->cur, slot))
			return true;
		ExecClearTuple(slot);
		return false;
	}
	if (ScanDirectionIsForward(direction))
	{
		for (s = scan->started ? scan->cur + 1 : lo; s < hi; s++)
		{
			if (fc_scan_fetch(scan, (uint64) s, slot))
			{
				scan->cur = s;
				scan->started = true;
				return true;
			}
		}
		scan->cur = hi;
	}
	else
	{
		for (s = scan->started ? scan->cur - 1 : hi - 1; s >= lo; s--)
		{
			if (fc_scan_fetch(scan, (uint64) s, slot))
			{
				scan->cur = s;
				scan->started = true;
				return true;
			}
		}
		scan->cur = lo - 1;
	}
	scan->started = true;
	ExecClearTuple(slot);
	return false;
}

bool
fc_scan_getnextslot(TableScanDesc sscan, ScanDirection direction,
					TupleTableSlot *slot)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;

	/* a row a scan found is not ON CONFLICT's probed row (tid_versions.c) */
	fc_forget_probed_row();
	if (sscan->rs_parallel == NULL)
	{
		if (!fc_scan_serial(scan, direction, slot))
			return false;
		pgstat_count_heap_getnext(sscan->rs_rd);
		return true;
	}

	Assert(ScanDirectionIsForward(direction));
	for (;;)
	{
		while (scan->next_slot < scan->end_slot)
		{
			uint64		slotno = scan->next_slot++;

			if (fc_scan_fetch(scan, slotno, slot))
			{
				pgstat_count_heap_getnext(sscan->rs_rd);
				return true;
			}
		}
		if (!fc_parallel_next_block(scan))
			break;
	}
	ExecClearTuple(slot);
	return false;
}

void
fc_scan_set_tidrange(TableScanDesc sscan, ItemPointer mintid, ItemPointer maxtid)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	uint64		nslots = fc_table_nslots(scan->tbl);
	uint64		lo,
				hi;

	/* offsets outside 1..FC_SLOTS_PER_BLOCK clamp to the block's ends */
	lo = (uint64) ItemPointerGetBlockNumberNoCheck(mintid) * FC_SLOTS_PER_BLOCK;
	if (ItemPointerGetOffsetNumberNoCheck(mintid) > 0)
		lo += Min(ItemPointerGetOffsetNumberNoCheck(mintid) - 1, FC_SLOTS_PER_BLOCK);
	hi = (uint64) ItemPointerGetBlockNumberNoCheck(maxtid) * FC_SLOTS_PER_BLOCK;
	hi += Min((uint64) ItemPointerGetOffsetNumberNoCheck(maxtid), FC_SLOTS_PER_BLOCK);
	scan->next_slot = lo;
	scan->end_slot = Min(hi, nslots);
	scan->started = false;
}

bool
fc_scan_getnextslot_tidrange(TableScanDesc sscan, ScanDirection direction,
							 TupleTableSlot *slot)
{
	return fc_scan_getnextslot(sscan, direction, slot);
}

/* ---- bitmap heap scans ---- */

bool
fc_scan_bitmap_next_block(TableScanDesc sscan, TBMIterateResult *tbmres)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;

	if ((uint64) tbmres->blockno * FC_SLOTS_PER_BLOCK >= fc_table_nslots(scan->tbl))
		return false;
	scan->tbmres = tbmres;
	scan->tbm_index = 0;
	scan->tbm_block_start = (uint64) tbmres->blockno * FC_SLOTS_PER_BLOCK;
	return true;
}

bool
fc_scan_bitmap_next_tuple(TableScanDesc sscan, TBMIterateResult *tbmres,
						  TupleTableSlot *slot)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	uint64		nslots = fc_table_nslots(scan->tbl);

	fc_forget_probed_row();
	for (;;)
	{
		uint64		slotno;

		if (tbmres->ntuples >= 0)
		{
			/* exact: the listed offsets */
			if (scan->tbm_index >= tbmres->ntuples)
				break;
			slotno = scan->tbm_block_start + tbmres->offsets[scan->tbm_index++] - 1;
		}
		else
		{
			/* lossy: every slot of the block, quals are rechecked */
			if (scan->tbm_index >= FC_SLOTS_PER_BLOCK)
				break;
			slotno = scan->tbm_block_start + scan->tbm_index++;
		}
		if (slotno >= nslots)
			continue;
		if (fc_scan_fetch(scan, slotno, slot))
		{
			pgstat_count_heap_fetch(sscan->rs_rd);
			return true;
		}
	}
	ExecClearTuple(slot);
	return false;
}

/* ---- TABLESAMPLE ---- */

/*
 * Sampling methods work on blocks and line pointers; a virtual block's
 * line pointers are its slots.  As on heap, a method without its own block
 * order gets every block in turn, and the table's size is the one the scan
 * began with, so REPEATABLE samples the same rows of an unchanged table.
 */
bool
fc_scan_sample_next_block(TableScanDesc sscan, struct SampleScanState *scanstate)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	BlockNumber blockno;

	if (scan->sample_nblocks == 0)
		return false;
	if (tsm->NextSampleBlock)
		blockno = tsm->NextSampleBlock(scanstate, scan->sample_nblocks);
	else if (scan->cur_block == InvalidBlockNumber)
		blockno = 0;
	else if (scan->cur_block + 1 < scan->sample_nblocks)
		blockno = scan->cur_block + 1;
	else
		blockno = InvalidBlockNumber;

	scan->cur_block = blockno;
	if (!BlockNumberIsValid(blockno))
		return false;
	scan->tbm_block_start = (uint64) blockno * FC_SLOTS_PER_BLOCK;
	return true;
}

bool
fc_scan_sample_next_tuple(TableScanDesc sscan, struct SampleScanState *scanstate,
						  TupleTableSlot *slot)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	TsmRoutine *tsm = scanstate->tsmroutine;
	uint64		nslots = fc_table_nslots(scan->tbl);
	OffsetNumber maxoffset;

	fc_forget_probed_row();
	/* the slots of this block the table has now (it never shrinks) */
	maxoffset = (OffsetNumber) Min((uint64) FC_SLOTS_PER_BLOCK,
								   nslots - Min(nslots, scan->tbm_block_start));
	for (;;)
	{
		OffsetNumber offset;

		CHECK_FOR_INTERRUPTS();
		offset = tsm->NextSampleTuple(scanstate, scan->cur_block, maxoffset);
		if (!OffsetNumberIsValid(offset))
			break;
		if (fc_scan_fetch(scan, scan->tbm_block_start + offset - 1, slot))
		{
			pgstat_count_heap_getnext(sscan->rs_rd);
			return true;
		}
	}
	ExecClearTuple(slot);
	return false;
}

/* ---- ANALYZE ---- */

bool
fc_scan_analyze_next_block(TableScanDesc sscan, BlockNumber blockno,
						   BufferAccessStrategy bstrategy)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;

	scan->cur_block = blockno;
	scan->next_slot = (uint64) blockno * FC_SLOTS_PER_BLOCK;
	scan->end_slot = Min(scan->next_slot + FC_SLOTS_PER_BLOCK,
						 fc_table_nslots(scan->tbl));
	return scan->next_slot < scan->end_slot;
}

/*
 * Sample committed live rows (and our own); count rows deleted by committed
 * transactions as dead, as heap's ANALYZE does.
 */
bool
fc_scan_analyze_next_tuple(TableScanDesc sscan, TransactionId OldestXmin,
						   double *liverows, double *deadrows,
						   TupleTableSlot *slot)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	Relation	rel = sscan->rs_rd;

	while (scan->next_slot < scan->end_slot)
	{
		uint64		slotno = scan->next_slot++;
		LWLock	   *lock = fc_slot_lock(scan->tbl, slotno);
		char	   *sp = fc_slot_ptr(scan->tbl, slotno);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		bool		sample = false;

		LWLockAcquire(lock, LW_SHARED);
		if ((hdr->flags & FC_SLOT_USED) && !(hdr->flags & FC_SLOT_DEAD))
		{
			/* deleted by a committed transaction, or by our own (as heap) */
			if (fc_slot_recently_dead(hdr) ||
				(fc_xmax_live(hdr) && TransactionIdIsCurrentTransactionId(hdr->xmax)))
				*deadrows += 1;
			else if (fc_xmin_aborted(hdr->xmin, &hdr->flags) && hdr->undo == NULL)
				*deadrows += 1;
			else
			{
				FcVisible	v;

				if (fc_latest_version(hdr, fc_pp_live(sp, &scan->tbl->layout), &v))
				{
					fc_store_version(slot, rel, slotno, &v);
					sample = true;
					*liverows += 1;
				}
			}
		}
		LWLockRelease(lock);
		if (sample)
			return true;
	}
	ExecClearTuple(slot);
	return false;
}
