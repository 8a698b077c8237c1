/*-------------------------------------------------------------------------
 *
 * ssi.c
 *	  SERIALIZABLE on fastckpt tables: predicate locks and rw-conflicts for
 *	  PostgreSQL's serializable snapshot isolation (storage/lmgr/predicate.c).
 *
 * As heap does: sequential scans lock the whole table, other reads lock the
 * row they return (by TID; an in-place update keeps the TID, so a later
 * writer of the row finds the lock), and index AMs lock their own pages.
 * A read that skips versions written by transactions its snapshot does not
 * see reports a conflict out to each of them; a write reports a conflict
 * in against the locks on its row and table.
 *
 * The write check runs after the write is in place rather than before it,
 * as predicate.c allows: a reader that got there first holds its lock by
 * then (readers lock under the slot latch), and one that comes after finds
 * the write in flight and reports the conflict out itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/predicate.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"

/* A rw-conflict out to xid, if its write is one the snapshot does not see. */
static void
fc_ssi_conflict_out_xid(Relation rel, TransactionId xid, uint16 xmin_flags,
						Snapshot snapshot)
{
	if (!TransactionIdIsNormal(xid) ||
		(xmin_flags & (FC_XMIN_ABORTED | FC_XMIN_FROZEN)) ||
		TransactionIdIsCurrentTransactionId(xid) ||
		TransactionIdPrecedes(xid, TransactionXmin) ||
		!XidInMVCCSnapshot(xid, snapshot))
		return;
	xid = SubTransGetTopmostTransaction(xid);
	if (TransactionIdPrecedes(xid, TransactionXmin))
		return;
	CheckForSerializableConflictOut(rel, xid, snapshot);
}

/*
 * A serializable read of one slot, with its latch held: v is the version
 * returned, or NULL if the snapshot sees none.
 */
void
fc_ssi_read_slot(Relation rel, uint64 slotno, FcSlotHeader *hdr,
				 const FcVisible *v, Snapshot snapshot)
{
	if (!IsMVCCSnapshot(snapshot) || !(hdr->flags & FC_SLOT_USED) ||
		!CheckForSerializableConflictOutNeeded(rel, snapshot))
		return;

	if (v != NULL && v->is_live)
	{
		/* the newest version: only a deletion can have been missed */
		if (TransactionIdIsValid(v->xmax))
			fc_ssi_conflict_out_xid(rel, v->xmax, 0, snapshot);
	}
	else
	{
		/* every version newer than the one returned, and the deletion */
		fc_ssi_conflict_out_xid(rel, hdr->xmin, hdr->flags, snapshot);
		for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
		{
			if (v != NULL && u->data == v->data)
				break;
			fc_ssi_conflict_out_xid(rel, u->xmin, u->flags, snapshot);
		}
		if (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED))
			fc_ssi_conflict_out_xid(rel, hdr->xmax, 0, snapshot);
	}

	if (v != NULL)
	{
		ItemPointerData tid;

		fc_slot_to_tid(slotno, &tid);
		PredicateLockTID(rel, &tid, snapshot, v->xmin);
	}
}

void
fc_ssi_check_write(Relation rel, ItemPointer tid)
{
	if (tid != NULL)
		CheckForSerializableConflictIn(rel, tid, ItemPointerGetBlockNumber(tid));
	else
		CheckForSerializableConflictIn(rel, NULL, InvalidBlockNumber);
}
