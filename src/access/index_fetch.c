/*-------------------------------------------------------------------------
 *
 * index_fetch.c
 *	  Fetching rows by TID: index scans, TID scans, EvalPlanQual re-reads.
 *
 * A TID names a slot, and a slot keeps its TID for the row's whole life
 * (in-place updates), so there are no HOT chains to follow: one fetch reads
 * the version the snapshot sees.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "pgstat.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "txn/read_set.h"
#include "txn/write_set.h"

/*
 * Index probes inside a registered call.  A probe that returned no row to
 * a query is a read of the whole table: a later insert of the key would
 * change the call's outcome.  index_rescan resets the fetch state before
 * each probe, and index_getnext resets it once more when the index has no
 * more entries, so an empty probe shows as two resets with no row
 * returned in between; the first of them comes before the index was
 * searched, which is where the table's write count is taken.  A reset
 * after a probe that returned rows, followed by a new probe, looks the
 * same and is counted too: a needless fallback, never a missed read.
 * Fetches without a reset before them are uniqueness and constraint
 * checks, which PostgreSQL orders with row locks and waits.
 */
typedef struct FcIndexFetch
{
	IndexFetchTableData base;
	FcTable    *tbl;
	bool		reset_seen;		/* a probe has started */
	bool		rescanned;		/* index_rescan'd: an executor probe, not a
								 * uniqueness check inside an index insertion */
	bool		hit_since_reset;	/* a row went back to a query since */
	FcTableReadMark mark;		/* taken at the last reset */
} FcIndexFetch;

IndexFetchTableData *
fc_index_fetch_begin(Relation rel)
{
	FcIndexFetch *scan = palloc0(sizeof(FcIndexFetch));

	fc_gate_wait(rel);
	scan->base.rel = rel;
	scan->tbl = fc_table_for_rel(rel);
	return &scan->base;
}

void
fc_index_fetch_reset(IndexFetchTableData *sscan)
{
	FcIndexFetch *scan = (FcIndexFetch *) sscan;

	scan->rescanned = true;
	if (likely(!fc_read_set_active))
		return;
	if (scan->reset_seen && !scan->hit_since_reset)
		fc_read_note_table_at(scan->tbl, &scan->mark);
	scan->reset_seen = true;
	scan->hit_since_reset = false;
	fc_read_mark(scan->tbl, &scan->mark);
}

void
fc_index_fetch_end(IndexFetchTableData *sscan)
{
	pfree(sscan);
}

bool
fc_index_fetch_tuple(IndexFetchTableData *sscan, ItemPointer tid,
					 Snapshot snapshot, TupleTableSlot *slot,
					 bool *call_again, bool *all_dead)
{
	FcIndexFetch *scan = (FcIndexFetch *) sscan;
	uint64		slotno;
	LWLock	   *lock;
	char	   *sp;
	FcSlotHeader *hdr;
	FcVisible	v;
	bool		found;

	*call_again = false;
	if (all_dead)
		*all_dead = false;
	fc_gate_check_snapshot(sscan->rel, snapshot);
	/* a row a scan found is not ON CONFLICT's probed row (tid_versions.c) */
	if (snapshot->snapshot_type != SNAPSHOT_DIRTY)
		fc_forget_probed_row();
	if (!fc_tid_in_range(scan->tbl, tid, &slotno))
		return false;

	lock = fc_slot_lock(scan->tbl, slotno);
	sp = fc_slot_ptr(scan->tbl, slotno);
	hdr = (FcSlotHeader *) sp;
	LWLockAcquire(lock, LW_SHARED);
	found = fc_visible_version(hdr, fc_pp_live(sp, &scan->tbl->layout), snapshot, &v);
	if (unlikely(fc_read_set_active))
	{
		/*
		 * A dirty snapshot is a uniqueness probe: INSERT ... ON CONFLICT
		 * DO NOTHING did nothing because of the row it found, which must
		 * still be there for replay.  (A probe that finds nothing goes on
		 * to insert, which the unique index orders against other inserts.)
		 */
		if (IsMVCCSnapshot(snapshot) ||
			(found && snapshot->snapshot_type == SNAPSHOT_DIRTY))
			fc_read_note_row_slow(scan->tbl, slotno, hdr, found ? &v : NULL, snapshot);
		scan->hit_since_reset |= found;
	}
	fc_ssi_read(sscan->rel, slotno, hdr, found ? &v : NULL, snapshot);
	if (found && snapshot->snapshot_type == SNAPSHOT_DIRTY && scan->rescanned &&
		fc_probes_wanted(sscan->rel))
		fc_note_probed_row(sscan->rel, tid, hdr->xmin, hdr->cmin);
	if (found)
		fc_store_version(slot, sscan->rel, slotno, &v);
	else if (all_dead && (hdr->flags & FC_SLOT_USED))
	{
		/* lets the index mark its entry dead (kill_prior_tuple) */
		*all_dead = fc_slot_dead_to_all(hdr, GlobalVisTestFor(sscan->rel));
	}
	LWLockRelease(lock);
	fc_wait_read_durable();
	if (found)
		pgstat_count_heap_fetch(sscan->rel);
	return found;
}

/* The version an in-place update by this command replaced, if still there. */
static bool
fc_fetch_replaced_version(Relation rel, FcTable *tbl, uint64 slotno,
						  FcUndo *undo, CommandId cid, TupleTableSlot *slot)
{
	LWLock	   *lock = fc_slot_lock(tbl, slotno);
	FcVisible	v;
	bool		found;

	LWLockAcquire(lock, LW_SHARED);
	found = fc_version_replaced_by_own_update(fc_slot_header(tbl, slotno), undo,
											  cid, &v);
	if (found)
		fc_store_version(slot, rel, slotno, &v);
	LWLockRelease(lock);
	return found;
}

/*
 * Right after an in-place update, the executor's SnapshotAny fetch of the
 * same TID reads the old row for AFTER UPDATE triggers: it gets the
 * version the update replaced (see fc_take_replaced_row).
 */
bool
fc_tuple_fetch_row_version(Relation rel, ItemPointer tid, Snapshot snapshot,
						   TupleTableSlot *slot)
{
	FcTable    *tbl;
	uint64		slotno;
	FcUndo	   *replaced;
	CommandId	cid;

	fc_gate_wait(rel);
	fc_gate_check_snapshot(rel, snapshot);
	tbl = fc_table_for_rel(rel);
	replaced = fc_take_replaced_row(rel, tid, &cid);
	/* a row a TID scan found is not ON CONFLICT's probed row */
	if (IsMVCCSnapshot(snapshot))
		fc_forget_probed_row();
	if (!fc_tid_in_range(tbl, tid, &slotno))
		return false;
	if (replaced != NULL && snapshot->snapshot_type == SNAPSHOT_ANY &&
		fc_fetch_replaced_version(rel, tbl, slotno, replaced, cid, slot))
		return true;
	return fc_fetch_slot_version(rel, tbl, slotno, snapshot, slot);
}

bool
fc_tuple_tid_valid(TableScanDesc sscan, ItemPointer tid)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	uint64		slotno;

	return ItemPointerIsValid(tid) && fc_tid_in_range(scan->tbl, tid, &slotno);
}

/*
 * Follow a row moved by updates (an indexed column changed, or triggers
 * needed the old version) to its latest version the scan's snapshot sees,
 * as heap follows t_ctid: moves by this transaction's earlier commands
 * included, so that WHERE CURRENT OF finds a row the transaction moved.
 * *tid is left alone if no version on the way is visible.
 */
void
fc_tuple_get_latest_tid(TableScanDesc sscan, ItemPointer tid)
{
	FcScanDesc *scan = (FcScanDesc *) sscan;
	ItemPointerData ctid = *tid;
	uint64		slotno;
	uint16		want_tag = 0;

	while (fc_tid_in_range(scan->tbl, &ctid, &slotno))
	{
		LWLock	   *lock = fc_slot_lock(scan->tbl, slotno);
		char	   *sp = fc_slot_ptr(scan->tbl, slotno);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		FcVisible	v;
		bool		visible;
		bool		moved;
		ItemPointerData next;

		LWLockAcquire(lock, LW_SHARED);
		if (want_tag != 0 && hdr->moved_from != want_tag)
		{
			/* the slot was freed and taken by another row since */
			LWLockRelease(lock);
			return;
		}
		visible = fc_visible_version(hdr, fc_pp_live(sp, &scan->tbl->layout),
									 sscan->rs_snapshot, &v);
		fc_ssi_read(sscan->rs_rd, slotno, hdr, visible ? &v : NULL, sscan->rs_snapshot);
		moved = (hdr->flags & FC_SLOT_USED) && (hdr->flags & FC_XMAX_UPDATED) &&
			TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
			ItemPointerIsValid(&hdr->next_tid) &&
			!ItemPointerIndicatesMovedPartitions(&hdr->next_tid);
		next = hdr->next_tid;
		LWLockRelease(lock);
		if (visible)
			*tid = ctid;
		if (!moved)
			return;
		ctid = next;
		want_tag = fc_move_tag(slotno);
	}
}

/* Is the version held in the executor slot the one the snapshot sees? */
bool
fc_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot, Snapshot snapshot)
{
	HeapTupleTableSlot *hslot = (HeapTupleTableSlot *) slot;
	FcTable    *tbl = fc_table_for_rel(rel);
	uint64		slotno;
	LWLock	   *lock;
	char	   *sp;
	FcVisible	v;
	bool		result;

	Assert(TTS_IS_HEAPTUPLE(slot) && hslot->tuple != NULL);
	if (!fc_tid_in_range(tbl, &slot->tts_tid, &slotno))
		return false;
	lock = fc_slot_lock(tbl, slotno);
	sp = fc_slot_ptr(tbl, slotno);
	LWLockAcquire(lock, LW_SHARED);
	result = fc_visible_version((FcSlotHeader *) sp, fc_pp_live(sp, &tbl->layout),
								snapshot, &v) &&
		v.xmin == HeapTupleHeaderGetRawXmin(hslot->tuple->t_data) &&
		v.cmin == HeapTupleHeaderGetRawCommandId(hslot->tuple->t_data);
	LWLockRelease(lock);
	return result;
}

/*
 * Which of these index entries point at rows no snapshot can see (index
 * bottom-up and simple deletion)?  Entries the index already knows dead
 * stay so.  As heap does, the array is shrunk to the deletable entries:
 * index AMs rely on an empty array meaning "nothing to delete".
 */
TransactionId
fc_index_delete_tuples(Relation rel, TM_IndexDeleteOp *delstate)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	GlobalVisState *vistest = GlobalVisTestFor(rel);
	TransactionId latest = InvalidTransactionId;
	int			nkept = 0;

	for (int i = 0; i < delstate->ndeltids; i++)
	{
		TM_IndexDelete *del = &delstate->deltids[i];
		TM_IndexStatus *status = &delstate->status[del->id];
		uint64		slotno;

		if (!status->knowndeletable && fc_tid_in_range(tbl, &del->tid, &slotno))
		{
			LWLock	   *lock = fc_slot_lock(tbl, slotno);
			FcSlotHeader *hdr = fc_slot_header(tbl, slotno);

			LWLockAcquire(lock, LW_SHARED);
			if ((hdr->flags & FC_SLOT_USED) && fc_slot_dead_to_all(hdr, vistest))
			{
				status->knowndeletable = true;
				if (TransactionIdIsValid(hdr->xmax) &&
					TransactionIdFollows(hdr->xmax, latest))
					latest = hdr->xmax;
			}
			LWLockRelease(lock);
		}
		if (status->knowndeletable)
			delstate->deltids[nkept++] = *del;
	}
	delstate->ndeltids = nkept;
	return latest;
}
