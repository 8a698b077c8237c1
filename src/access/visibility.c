/*-------------------------------------------------------------------------
 *
 * visibility.c
 *	  Which version of a row a snapshot sees.
 *
 * A row is its live version (in the slot) plus a chain of older versions
 * in undo, newest first.  A snapshot sees the newest version whose creator
 * it sees; if that is the live version, the row may still be deleted for
 * it (xmax).  An older version's end is the creation of the next newer
 * one, which the walk has just found invisible, so undo versions need no
 * xmax of their own.  The rules per snapshot type follow heap's
 * (heapam_visibility.c), with hint flags cached in the header.
 *
 * Hints are set under a shared latch: concurrent readers may race and lose
 * a hint, which only costs a later clog lookup; writers hold the latch
 * exclusively, so a hint never overwrites a writer's change.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/multixact.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "log/log.h"

/* Did the creator commit?  (Not in progress and committed in clog.) */
bool
fc_xmin_committed(TransactionId xmin, uint16 *flags)
{
	if (*flags & (FC_XMIN_COMMITTED | FC_XMIN_FROZEN))
		return true;
	if (*flags & FC_XMIN_ABORTED)
		return false;
	if (TransactionIdIsInProgress(xmin))
		return false;
	if (TransactionIdDidCommit(xmin))
	{
		*flags |= FC_XMIN_COMMITTED;
		return true;
	}
	if (!fc_log_xid_voidable(xmin))
		*flags |= FC_XMIN_ABORTED;
	return false;
}

/*
 * Did the creator abort?  False while it is still running, or has ended
 * without having voided its log records yet (fc_log_set_voidable).
 */
bool
fc_xmin_aborted(TransactionId xmin, uint16 *flags)
{
	if (*flags & FC_XMIN_ABORTED)
		return true;
	if (*flags & (FC_XMIN_COMMITTED | FC_XMIN_FROZEN))
		return false;
	if (TransactionIdIsCurrentTransactionId(xmin) || TransactionIdIsInProgress(xmin))
		return false;
	if (TransactionIdDidCommit(xmin))
	{
		*flags |= FC_XMIN_COMMITTED;
		return false;
	}
	if (fc_log_xid_voidable(xmin))
		return false;
	*flags |= FC_XMIN_ABORTED;
	return true;
}

bool
fc_xmin_visible_mvcc(TransactionId xmin, CommandId cmin, uint16 *flags,
					 Snapshot snapshot)
{
	if (*flags & FC_XMIN_FROZEN)
		return true;
	if (*flags & FC_XMIN_ABORTED)
		return false;
	if (*flags & FC_XMIN_COMMITTED)
		return !XidInMVCCSnapshot(xmin, snapshot);
	if (TransactionIdIsCurrentTransactionId(xmin))
		return cmin < snapshot->curcid;
	if (XidInMVCCSnapshot(xmin, snapshot))
		return false;
	if (TransactionIdDidCommit(xmin))
	{
		*flags |= FC_XMIN_COMMITTED;
		return true;
	}
	/* not running when the snapshot was taken, and not committed */
	if (!fc_log_xid_voidable(xmin))
		*flags |= FC_XMIN_ABORTED;
	return false;
}

/* Is the live version's deletion visible to an MVCC snapshot? */
static bool
fc_xmax_visible_mvcc(FcSlotHeader *hdr, Snapshot snapshot)
{
	if (!TransactionIdIsValid(hdr->xmax) || (hdr->flags & FC_XMAX_ABORTED))
		return false;
	if (hdr->flags & FC_XMAX_COMMITTED)
		return !XidInMVCCSnapshot(hdr->xmax, snapshot);
	if (TransactionIdIsCurrentTransactionId(hdr->xmax))
		return hdr->cmax < snapshot->curcid;
	if (XidInMVCCSnapshot(hdr->xmax, snapshot))
		return false;
	if (TransactionIdDidCommit(hdr->xmax))
	{
		hdr->flags |= FC_XMAX_COMMITTED;
		return true;
	}
	if (!fc_log_xid_voidable(hdr->xmax))
		hdr->flags |= FC_XMAX_ABORTED;
	return false;
}

typedef enum FcXmaxState
{
	FC_XMAX_NONE,				/* no deleter, or it aborted */
	FC_XMAX_RUNNING,			/* us, or another running transaction */
	FC_XMAX_DONE				/* committed */
} FcXmaxState;

/* What became of the live version's deleter; caches the outcome in hints. */
static FcXmaxState
fc_xmax_state(FcSlotHeader *hdr)
{
	if (!TransactionIdIsValid(hdr->xmax) || (hdr->flags & FC_XMAX_ABORTED))
		return FC_XMAX_NONE;
	if (hdr->flags & FC_XMAX_COMMITTED)
		return FC_XMAX_DONE;
	if (TransactionIdIsCurrentTransactionId(hdr->xmax) ||
		TransactionIdIsInProgress(hdr->xmax))
		return FC_XMAX_RUNNING;
	if (TransactionIdDidCommit(hdr->xmax))
	{
		hdr->flags |= FC_XMAX_COMMITTED;
		return FC_XMAX_DONE;
	}
	if (fc_log_xid_voidable(hdr->xmax))
		return FC_XMAX_RUNNING;
	hdr->flags |= FC_XMAX_ABORTED;
	return FC_XMAX_NONE;
}

/* Is there a deleter that has committed? */
bool
fc_xmax_committed(FcSlotHeader *hdr)
{
	return fc_xmax_state(hdr) == FC_XMAX_DONE;
}

/* Is the deleter us, or running (see fc_xmax_state)? */
bool
fc_xmax_running(FcSlotHeader *hdr)
{
	return fc_xmax_state(hdr) == FC_XMAX_RUNNING;
}

/* Is there a deleter that has not aborted (running or committed)? */
bool
fc_xmax_live(FcSlotHeader *hdr)
{
	return fc_xmax_state(hdr) != FC_XMAX_NONE;
}

/* Creator committed, or is our transaction, and did not abort. */
static bool
fc_xmin_settled(TransactionId xmin, uint16 *flags)
{
	if (*flags & FC_XMIN_ABORTED)
		return false;
	return fc_xmin_committed(xmin, flags) || TransactionIdIsCurrentTransactionId(xmin);
}

/*
 * A row's lockers (its slot's xlock and xlock_info, copied) as heap leaves
 * them in the xmax of the version an update makes: only while one may still
 * hold its lock.  A single locker older than this backend's snapshot
 * horizon has ended, which spares most rows the process-array lookup.
 * Called without the slot latch: the lookups may take other locks.
 */
TransactionId
fc_row_lockers(TransactionId xlock, uint16 xlock_info, bool *is_multi)
{
	*is_multi = (xlock_info & FC_XLOCK_MULTI) != 0;
	if (!TransactionIdIsValid(xlock))
		return InvalidTransactionId;
	if (*is_multi)
		return MultiXactIdIsRunning(xlock, true) ? xlock : InvalidTransactionId;
	if (TransactionIdIsCurrentTransactionId(xlock))
		return xlock;
	if (TransactionIdIsNormal(TransactionXmin) &&
		TransactionIdPrecedes(xlock, TransactionXmin))
		return InvalidTransactionId;
	return TransactionIdIsInProgress(xlock) ? xlock : InvalidTransactionId;
}

static void
fc_set_live(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	out->data = live;
	out->len = hdr->live_len;
	out->xmin = hdr->xmin;
	out->cmin = hdr->cmin;
	out->xmax = (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED)) ?
		hdr->xmax : InvalidTransactionId;
	/*
	 * Reads show only this transaction's own lock: finding out whether
	 * another locker still runs would cost every read of a once-locked
	 * row a process-array or multixact lookup under the slot latch.
	 */
	out->locker = (TransactionIdIsValid(hdr->xlock) &&
				   !(hdr->xlock_info & FC_XLOCK_MULTI) &&
				   TransactionIdIsCurrentTransactionId(hdr->xlock)) ?
		hdr->xlock : InvalidTransactionId;
	out->locker_is_multi = false;
	out->is_live = true;
	out->stamp = hdr->link;
}

static void
fc_set_undo(FcSlotHeader *hdr, FcUndo *undo, TransactionId superseded_by,
			FcVisible *out)
{
	out->data = undo->data;
	out->len = undo->len;
	out->xmin = undo->xmin;
	out->cmin = undo->cmin;
	out->xmax = superseded_by;
	out->locker = InvalidTransactionId;
	out->locker_is_multi = false;
	out->is_live = false;
	out->stamp = hdr->link;		/* no older than the undo version's */
}

/*
 * Newest version whose creator committed (or is us), skipping versions of
 * running or aborted transactions.
 */
static bool
fc_newest_settled(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	TransactionId newer = hdr->xmin;

	if (fc_xmin_settled(hdr->xmin, &hdr->flags))
	{
		fc_set_live(hdr, live, out);
		return true;
	}
	for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
	{
		if (fc_xmin_settled(u->xmin, &u->flags))
		{
			fc_set_undo(hdr, u, newer, out);
			return true;
		}
		newer = u->xmin;
	}
	return false;
}

static bool
fc_visible_mvcc(FcSlotHeader *hdr, const char *live, Snapshot snapshot,
				FcVisible *out)
{
	TransactionId newer;

	if (fc_xmin_visible_mvcc(hdr->xmin, hdr->cmin, &hdr->flags, snapshot))
	{
		if (fc_xmax_visible_mvcc(hdr, snapshot))
			return false;
		fc_set_live(hdr, live, out);
		return true;
	}
	newer = hdr->xmin;
	for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
	{
		if (fc_xmin_visible_mvcc(u->xmin, u->cmin, &u->flags, snapshot))
		{
			fc_set_undo(hdr, u, newer, out);
			return true;
		}
		newer = u->xmin;
	}
	return false;
}

/*
 * SnapshotSelf: everything committed now, plus all of our own changes --
 * the newest settled version, unless that is the live one and it is
 * deleted by us or by a committed transaction.
 */
static bool
fc_visible_self(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	if (fc_xmin_settled(hdr->xmin, &hdr->flags) && fc_xmax_live(hdr) &&
		(TransactionIdIsCurrentTransactionId(hdr->xmax) || fc_xmax_committed(hdr)))
		return false;
	return fc_newest_settled(hdr, live, out);
}

/*
 * SnapshotDirty: like Self, but versions of running transactions are
 * visible too, with snapshot->xmin/xmax telling the caller whom to wait for
 * (unique checks, ON CONFLICT).
 */
static bool
fc_visible_dirty(FcSlotHeader *hdr, const char *live, Snapshot snapshot,
				 FcVisible *out)
{
	snapshot->xmin = snapshot->xmax = InvalidTransactionId;
	snapshot->speculativeToken = 0;

	if (!fc_xmin_aborted(hdr->xmin, &hdr->flags))
	{
		if (!TransactionIdIsCurrentTransactionId(hdr->xmin) &&
			!fc_xmin_committed(hdr->xmin, &hdr->flags))
		{
			snapshot->xmin = hdr->xmin;
			if (hdr->flags & FC_SPECULATIVE)
				snapshot->speculativeToken =
					ItemPointerGetBlockNumberNoCheck(&hdr->next_tid);
			fc_set_live(hdr, live, out);
			return true;
		}
		if (fc_xmax_live(hdr))
		{
			if (TransactionIdIsCurrentTransactionId(hdr->xmax) || fc_xmax_committed(hdr))
				return false;
			snapshot->xmax = hdr->xmax;
		}
		fc_set_live(hdr, live, out);
		return true;
	}
	/* live version aborted, being rolled back: the settled one counts */
	return fc_newest_settled(hdr, live, out);
}

/* SnapshotNonVacuumable: everything not yet removable. */
static bool
fc_visible_non_vacuumable(FcSlotHeader *hdr, const char *live, Snapshot snapshot,
						  FcVisible *out)
{
	if (fc_slot_dead_to_all(hdr, snapshot->vistest))
		return false;
	if (fc_xmin_aborted(hdr->xmin, &hdr->flags))
		return fc_newest_settled(hdr, live, out);
	fc_set_live(hdr, live, out);
	return true;
}

/*
 * SnapshotAny.  With in-place updates a TID names a row, not a version, so
 * "the tuple at this TID" must be chosen the way heap's callers mean it:
 * a row our transaction holds (wrote, deleted, or locked against updates)
 * is re-read at its latest version -- that is the version an UPDATE after
 * EvalPlanQual, or RETURNING after DELETE, works on.  Under READ COMMITTED
 * any other row is re-read as the running statement's snapshot sees it --
 * the version a scan returned, which EvalPlanQual re-fetches for the other
 * relations of a join.  Under REPEATABLE READ there is no EvalPlanQual,
 * and a TID found through a dirty index probe (ON CONFLICT) must show the
 * latest version so that a newer one is reported as a serialization
 * failure.  Never a version of a running or aborted transaction of
 * someone else.
 */
static bool
fc_visible_any(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	bool		ours;

	ours = (!(hdr->flags & FC_XMIN_ABORTED) &&
			TransactionIdIsCurrentTransactionId(hdr->xmin)) ||
		(TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
		 TransactionIdIsCurrentTransactionId(hdr->xmax)) ||
		fc_current_xact_holds_lock(hdr, LockTupleShare);
	if (!ours && !IsolationUsesXactSnapshot() && ActiveSnapshotSet())
	{
		Snapshot	active = GetActiveSnapshot();

		if (IsMVCCSnapshot(active) && fc_visible_mvcc(hdr, live, active, out))
			return true;
	}
	return fc_newest_settled(hdr, live, out);
}

/* Newest version whose creator committed or is us. */
bool
fc_latest_version(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	return fc_newest_settled(hdr, live, out);
}

/*
 * The version that this transaction's command cid replaced in place, if
 * undo is still the record that update pushed: the live version must be
 * that update's, not rolled back since.
 */
bool
fc_version_replaced_by_own_update(FcSlotHeader *hdr, FcUndo *undo, CommandId cid,
								  FcVisible *out)
{
	if (!(hdr->flags & FC_SLOT_USED) || (hdr->flags & (FC_SLOT_DEAD | FC_XMIN_ABORTED)) ||
		hdr->undo != undo || hdr->cmin != cid || undo->superseded_by != hdr->xmin ||
		!TransactionIdIsCurrentTransactionId(hdr->xmin))
		return false;
	fc_set_undo(hdr, undo, hdr->xmin, out);
	return true;
}

/* The live version as it is, whatever its state (for conflict reports). */
void
fc_live_version(FcSlotHeader *hdr, const char *live, FcVisible *out)
{
	fc_set_live(hdr, live, out);
}

bool
fc_visible_version(FcSlotHeader *hdr, const char *live, Snapshot snapshot,
				   FcVisible *out)
{
	if (!(hdr->flags & FC_SLOT_USED) || (hdr->flags & FC_SLOT_DEAD))
		return false;

	switch (snapshot->snapshot_type)
	{
		case SNAPSHOT_MVCC:
			return fc_visible_mvcc(hdr, live, snapshot, out);
		case SNAPSHOT_SELF:
			return fc_visible_self(hdr, live, out);
		case SNAPSHOT_ANY:
			return fc_visible_any(hdr, live, out);
		case SNAPSHOT_DIRTY:
			return fc_visible_dirty(hdr, live, snapshot, out);
		case SNAPSHOT_NON_VACUUMABLE:
			return fc_visible_non_vacuumable(hdr, live, snapshot, out);
		case SNAPSHOT_TOAST:
		case SNAPSHOT_HISTORIC_MVCC:
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("snapshot type %d is not supported for fastckpt tables",
					(int) snapshot->snapshot_type)));
	return false;				/* keep compiler quiet */
}

/*
 * Can the slot be reclaimed: an aborted insert, or a deletion that every
 * snapshot sees?
 */
bool
fc_slot_dead_to_all(FcSlotHeader *hdr, GlobalVisState *vistest)
{
	if (hdr->flags & FC_SLOT_DEAD)
		return true;
	if (hdr->undo == NULL && fc_xmin_aborted(hdr->xmin, &hdr->flags))
		return true;
	if (TransactionIdIsValid(hdr->xmax) && fc_xmax_committed(hdr) &&
		GlobalVisTestIsRemovableXid(vistest, hdr->xmax))
		return true;
	return false;
}

/* Deleted by a committed transaction that some snapshot may not see yet. */
bool
fc_slot_recently_dead(FcSlotHeader *hdr)
{
	return TransactionIdIsValid(hdr->xmax) && fc_xmax_committed(hdr);
}
