/*-------------------------------------------------------------------------
 *
 * row_lock.c
 *	  Row-level conflicts between writers and lockers, and SELECT ... FOR
 *	  UPDATE/NO KEY UPDATE/SHARE/KEY SHARE.
 *
 * Who holds a row, in heap's lock modes:
 *	- the creator of the live version, while running, if it came from an
 *	  in-place update: FOR NO KEY UPDATE (in-place updates never change an
 *	  indexed column, hence no key column either);
 *	- the live version's deleter/mover, while running: FOR UPDATE, or FOR
 *	  NO KEY UPDATE for a move that kept the key columns;
 *	- explicit lockers in xlock: one xid with its mode, or a MultiXactId
 *	  whose members carry theirs.
 * Waits go through XactLockTableWait, so PostgreSQL's deadlock detector
 * sees them; the heavyweight tuple lock taken first orders waiters fairly
 * (as heap does).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/multixact.h"
#include "access/transam.h"
#include "access/xact.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "txn/read_set.h"
#include "txn/write_set.h"

LOCKMODE
fc_tuple_lock_hwmode(LockTupleMode mode)
{
	switch (mode)
	{
		case LockTupleKeyShare:
			return AccessShareLock;
		case LockTupleShare:
			return RowShareLock;
		case LockTupleNoKeyExclusive:
			return ExclusiveLock;
		case LockTupleExclusive:
			return AccessExclusiveLock;
	}
	return AccessExclusiveLock;
}

static bool
fc_modes_conflict(LockTupleMode held, LockTupleMode wanted)
{
	return DoLockModesConflict(fc_tuple_lock_hwmode(held), fc_tuple_lock_hwmode(wanted));
}

static MultiXactStatus
fc_lock_status(LockTupleMode mode)
{
	switch (mode)
	{
		case LockTupleKeyShare:
			return MultiXactStatusForKeyShare;
		case LockTupleShare:
			return MultiXactStatusForShare;
		case LockTupleNoKeyExclusive:
			return MultiXactStatusForNoKeyUpdate;
		case LockTupleExclusive:
			return MultiXactStatusForUpdate;
	}
	return MultiXactStatusForUpdate;
}

static bool
fc_xid_running(TransactionId xid)
{
	return TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid);
}

/*
 * The strongest lock our transaction (any of its live subtransactions)
 * holds on the row as an explicit locker; false if none.
 */
bool
fc_current_xact_lock(FcSlotHeader *hdr, LockTupleMode *mode)
{
	bool		held = false;

	if (!TransactionIdIsValid(hdr->xlock))
		return false;
	if (!(hdr->xlock_info & FC_XLOCK_MULTI))
	{
		if (!TransactionIdIsCurrentTransactionId(hdr->xlock))
			return false;
		*mode = (LockTupleMode) (hdr->xlock_info & FC_XLOCK_MODE_MASK);
		return true;
	}
	else
	{
		MultiXactMember *members;
		int			n = GetMultiXactIdMembers(hdr->xlock, &members, false, true);

		for (int i = 0; i < n; i++)
		{
			LockTupleMode m = (LockTupleMode) (members[i].status & FC_XLOCK_MODE_MASK);

			if (!TransactionIdIsCurrentTransactionId(members[i].xid))
				continue;
			if (!held || m > *mode)
				*mode = m;
			held = true;
		}
		if (n > 0)
			pfree(members);
		return held;
	}
}

/* Does our transaction (any of its live subtransactions) hold >= mode? */
bool
fc_current_xact_holds_lock(FcSlotHeader *hdr, LockTupleMode mode)
{
	LockTupleMode held;

	return fc_current_xact_lock(hdr, &held) && held >= mode;
}

/* An explicit locker (other than us, still running) that conflicts. */
static bool
fc_locker_conflict(FcSlotHeader *hdr, LockTupleMode mode, FcRowConflict *conflict)
{
	if (!TransactionIdIsValid(hdr->xlock))
		return false;
	if (!(hdr->xlock_info & FC_XLOCK_MULTI))
	{
		if (!TransactionIdIsCurrentTransactionId(hdr->xlock) &&
			TransactionIdIsInProgress(hdr->xlock) &&
			fc_modes_conflict((LockTupleMode) (hdr->xlock_info & FC_XLOCK_MODE_MASK), mode))
		{
			conflict->wait_xid = hdr->xlock;
			return true;
		}
		return false;
	}
	else
	{
		MultiXactMember *members;
		int			n = GetMultiXactIdMembers(hdr->xlock, &members, false, true);
		bool		found = false;

		for (int i = 0; i < n && !found; i++)
		{
			if (TransactionIdIsCurrentTransactionId(members[i].xid) ||
				!TransactionIdIsInProgress(members[i].xid))
				continue;
			if (fc_modes_conflict((LockTupleMode) (members[i].status & FC_XLOCK_MODE_MASK), mode))
			{
				conflict->wait_xid = members[i].xid;
				found = true;
			}
		}
		if (n > 0)
			pfree(members);
		return found;
	}
}

/*
 * Look at the latest state of a row on behalf of a writer (is_lock false)
 * or a locker wanting `mode`.  `snapshot` is the one the caller found the
 * row with: if the live version is newer than that (a concurrent in-place
 * update committed), the caller's version is out of date (UPDATED) unless
 * `follow` asks for the latest version, or we already hold a lock that kept
 * everyone else out since we last read it.  Slot latch held exclusively.
 */
FcRowCheck
fc_check_row(FcSlotHeader *hdr, uint64 slotno, CommandId cid,
			 Snapshot snapshot, LockTupleMode mode, bool is_lock, bool follow,
			 FcRowConflict *conflict)
{
	memset(conflict, 0, sizeof(FcRowConflict));
	conflict->cmax = InvalidCommandId;
	fc_slot_to_tid(slotno, &conflict->ctid);

	if (!(hdr->flags & FC_SLOT_USED) || (hdr->flags & FC_SLOT_DEAD))
		return FC_ROW_DELETED;

	/* 1. the live version's creator */
	if (fc_xmin_aborted(hdr->xmin, &hdr->flags))
	{
		if (hdr->undo == NULL)
			return FC_ROW_INVISIBLE;
		/* its backend is rolling the row back; wait until it has */
		conflict->wait_xid = hdr->xmin;
		return FC_ROW_WAIT;
	}
	if (TransactionIdIsCurrentTransactionId(hdr->xmin))
	{
		if (hdr->cmin >= cid)
		{
			if (hdr->undo == NULL)
				return FC_ROW_INVISIBLE;
			conflict->xmax = hdr->xmin;
			conflict->cmax = hdr->cmin;
			return FC_ROW_SELF_MODIFIED;
		}
	}
	else if (!fc_xmin_committed(hdr->xmin, &hdr->flags))
	{
		/* running: an uncommitted insert, or an in-place updater */
		if (hdr->undo == NULL)
			return FC_ROW_INVISIBLE;
		if (!is_lock || fc_modes_conflict(LockTupleNoKeyExclusive, mode))
		{
			/*
			 * A transaction snapshot whose version a committed transaction
			 * already replaced fails at once, as on heap (whose version's
			 * xmax names that committed updater): no wait for the running
			 * one.
			 */
			if (!follow && IsolationUsesXactSnapshot() && snapshot != NULL &&
				IsMVCCSnapshot(snapshot))
			{
				FcUndo	   *u;

				for (u = hdr->undo; u != NULL; u = u->prev)
				{
					/* the running updater's own earlier versions */
					if (!fc_xmin_committed(u->xmin, &u->flags))
						continue;
					if (!fc_xmin_visible_mvcc(u->xmin, u->cmin, &u->flags, snapshot))
					{
						conflict->xmax = u->xmin;
						return FC_ROW_UPDATED;
					}
					break;
				}
			}
			conflict->wait_xid = hdr->xmin;
			conflict->holds_lock = fc_current_xact_holds_lock(hdr, LockTupleKeyShare);
			return FC_ROW_WAIT;
		}
	}
	else if (snapshot != NULL && IsMVCCSnapshot(snapshot) &&
			 !fc_xmin_visible_mvcc(hdr->xmin, hdr->cmin, &hdr->flags, snapshot))
	{
		if (follow)
			conflict->traversed = true;
		else if (is_lock && mode == LockTupleKeyShare)
		{
			/* in-place updates never change a key: KEY SHARE still holds */
		}
		else if (!fc_current_xact_holds_lock(hdr, LockTupleShare))
		{
			conflict->xmax = hdr->xmin;
			return FC_ROW_UPDATED;
		}
	}

	/* 2. the live version's deleter or mover */
	if (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED))
	{
		if (TransactionIdIsCurrentTransactionId(hdr->xmax))
		{
			if (hdr->cmax >= cid)
			{
				conflict->xmax = hdr->xmax;
				conflict->cmax = hdr->cmax;
				return FC_ROW_SELF_MODIFIED;
			}
			return FC_ROW_INVISIBLE;
		}
		if (fc_xmax_running(hdr))
		{
			LockTupleMode held = ((hdr->flags & FC_XMAX_UPDATED) &&
								  !(hdr->flags & FC_XMAX_KEYS_UPDATED)) ?
			LockTupleNoKeyExclusive : LockTupleExclusive;

			if (!is_lock || fc_modes_conflict(held, mode))
			{
				conflict->wait_xid = hdr->xmax;
				conflict->holds_lock = fc_current_xact_holds_lock(hdr, LockTupleKeyShare);
				return FC_ROW_WAIT;
			}
		}
		else if (fc_xmax_committed(hdr))
		{
			bool		moved = (hdr->flags & FC_XMAX_UPDATED) &&
				ItemPointerIsValid(&hdr->next_tid);

			/*
			 * A KEY SHARE lock survives a move that kept the key (heap
			 * locks such old versions too); the caller also locks the
			 * row's newer versions.  Following callers chase the move.
			 */
			if (!(is_lock && mode == LockTupleKeyShare && !follow && moved &&
				  !(hdr->flags & FC_XMAX_KEYS_UPDATED)))
			{
				conflict->xmax = hdr->xmax;
				if (moved)
				{
					conflict->ctid = hdr->next_tid;
					return FC_ROW_UPDATED;
				}
				return FC_ROW_DELETED;
			}
		}
	}

	/* 3. explicit lockers */
	if (fc_locker_conflict(hdr, mode, conflict))
	{
		conflict->holds_lock = fc_current_xact_holds_lock(hdr, LockTupleKeyShare);
		return FC_ROW_WAIT;
	}
	return FC_ROW_OK;
}

TM_Result
fc_row_check_to_tm(FcRowCheck check, FcRowConflict *conflict, TM_FailureData *tmfd)
{
	tmfd->ctid = conflict->ctid;
	tmfd->xmax = conflict->xmax;
	tmfd->cmax = conflict->cmax;
	switch (check)
	{
		case FC_ROW_OK:
			return TM_Ok;
		case FC_ROW_INVISIBLE:
			return TM_Invisible;
		case FC_ROW_SELF_MODIFIED:
			return TM_SelfModified;
		case FC_ROW_UPDATED:
			return TM_Updated;
		case FC_ROW_DELETED:
			return TM_Deleted;
		case FC_ROW_WAIT:
			tmfd->xmax = conflict->wait_xid;
			return TM_BeingModified;
	}
	return TM_Invisible;
}

void
fc_release_tuple_lock(Relation rel, ItemPointer tid, LockTupleMode mode,
					  bool *have_tuple_lock)
{
	if (*have_tuple_lock)
	{
		UnlockTuple(rel, tid, fc_tuple_lock_hwmode(mode));
		*have_tuple_lock = false;
	}
}

static void
fc_lock_not_available(Relation rel)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not obtain lock on row in relation \"%s\"",
					RelationGetRelationName(rel))));
}

/*
 * Wait for the conflicting transaction found by fc_check_row.  Returns
 * false if the policy is SKIP LOCKED and the row is busy; raises the NOWAIT
 * error itself.  No slot latch may be held.
 */
bool
fc_wait_for_conflict(Relation rel, ItemPointer tid, FcRowConflict *conflict,
					 LockTupleMode mode, LockWaitPolicy policy, XLTW_Oper oper,
					 bool *have_tuple_lock)
{
	/*
	 * The tuple lock queues us behind earlier waiters, except when we hold
	 * a lock on the row already (strengthening it): waiting behind someone
	 * who waits for our lock would deadlock, as heap's skip_tuple_lock
	 * avoids.
	 */
	if (!*have_tuple_lock && !conflict->holds_lock)
	{
		LOCKMODE	hw = fc_tuple_lock_hwmode(mode);

		if (policy == LockWaitBlock)
			LockTuple(rel, tid, hw);
		else if (!ConditionalLockTuple(rel, tid, hw))
		{
			if (policy == LockWaitSkip)
				return false;
			fc_lock_not_available(rel);
		}
		*have_tuple_lock = true;
	}
	if (policy == LockWaitBlock)
		XactLockTableWait(conflict->wait_xid, rel, tid, oper);
	else if (!ConditionalXactLockTableWait(conflict->wait_xid))
	{
		if (policy == LockWaitSkip)
			return false;
		fc_lock_not_available(rel);
	}
	return true;
}

/* Add a locker (any transaction) to a slot; slot latch held exclusively. */
static void
fc_add_locker(FcSlotHeader *hdr, TransactionId xid, LockTupleMode mode)
{
	if (TransactionIdIsValid(hdr->xlock) && !(hdr->xlock_info & FC_XLOCK_MULTI))
	{
		TransactionId old = hdr->xlock;
		LockTupleMode oldmode = (LockTupleMode) (hdr->xlock_info & FC_XLOCK_MODE_MASK);

		if (old == xid)
		{
			hdr->xlock_info = (uint16) Max(oldmode, mode);
			return;
		}
		if (fc_xid_running(old))
		{
			hdr->xlock = MultiXactIdCreate(old, fc_lock_status(oldmode),
										   xid, fc_lock_status(mode));
			hdr->xlock_info = FC_XLOCK_MULTI;
			return;
		}
	}
	else if (TransactionIdIsValid(hdr->xlock) && MultiXactIdIsRunning(hdr->xlock, true))
	{
		hdr->xlock = MultiXactIdExpand(hdr->xlock, xid, fc_lock_status(mode));
		hdr->xlock_info = FC_XLOCK_MULTI;
		return;
	}
	hdr->xlock = xid;
	hdr->xlock_info = (uint16) mode;
}

/*
 * Startup recovery: a prepared transaction's lock back on its row (it may
 * join another's in a MultiXactId: the caller called
 * MultiXactIdSetOldestMember in a transaction).
 */
void
fc_restore_row_lock(FcSlotHeader *hdr, TransactionId xid, LockTupleMode mode)
{
	fc_add_locker(hdr, xid, mode);
}

/* Record our lock in the slot; slot latch held exclusively. */
static void
fc_add_row_lock(FcSlotHeader *hdr, LockTupleMode mode)
{
	if (fc_current_xact_holds_lock(hdr, mode))
		return;
	/*
	 * An in-place update of ours already excludes others, but the lock is
	 * still recorded: heap keeps it in xmax and carries it to the next
	 * version, which ON CONFLICT ... RETURNING (xmax = 0) relies on.
	 */
	if (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
		TransactionIdIsCurrentTransactionId(hdr->xmax))
		return;
	fc_add_locker(hdr, GetCurrentTransactionId(), mode);
}

/*
 * A READ COMMITTED writer found the row updated in place by a transaction
 * that committed after its snapshot.  The executor's next step is to lock
 * the latest version (EvalPlanQual) and try again; take that lock now,
 * while the writer may still hold the heavyweight tuple lock it queued
 * for.  Going back through the queue instead lets every waiter on a hot
 * row wake, find it updated and queue again for the same TID, where heap's
 * re-lock names the new version's TID.  Returns FC_ROW_OK once the lock is
 * ours, FC_ROW_WAIT with the conflict to wait for, or another outcome for
 * the executor to handle as before.  Slot latch held exclusively.
 */
FcRowCheck
fc_lock_latest_for_update(FcSlotHeader *hdr, uint64 slotno, CommandId cid,
						  Snapshot snapshot, LockTupleMode mode,
						  FcRowConflict *conflict)
{
	FcRowCheck	check = fc_check_row(hdr, slotno, cid, snapshot, mode, true, true,
									 conflict);

	if (check == FC_ROW_OK)
	{
		/* our lock may join other lockers' in a MultiXactId */
		MultiXactIdSetOldestMember();
		fc_add_row_lock(hdr, mode);
	}
	return check;
}

/*
 * A row moving to a new slot takes its lockers along (heap keeps them on
 * the new version too): a KEY SHARE lock held for a foreign key must keep
 * protecting the row wherever it lives.  `to` is latched exclusively.
 */
void
fc_carry_lockers(FcSlotHeader *to, TransactionId xlock, uint16 xlock_info)
{
	MultiXactMember *members;
	int			n;

	if (!TransactionIdIsValid(xlock))
		return;
	if (!(xlock_info & FC_XLOCK_MULTI))
	{
		if (fc_xid_running(xlock))
			fc_add_locker(to, xlock, (LockTupleMode) (xlock_info & FC_XLOCK_MODE_MASK));
		return;
	}
	n = GetMultiXactIdMembers(xlock, &members, false, true);
	for (int i = 0; i < n; i++)
		if (fc_xid_running(members[i].xid))
			fc_add_locker(to, members[i].xid,
						  (LockTupleMode) (members[i].status & FC_XLOCK_MODE_MASK));
	if (n > 0)
		pfree(members);
}

/*
 * After a KEY SHARE lock on a row that was moved by an update keeping its
 * key, lock the newer versions too, as heap does for its update chains.
 * A newer version being deleted (or key-updated) by a running transaction
 * is a conflict to wait for; one already deleted ends the chain with that
 * outcome.
 */
static FcRowCheck
fc_lock_moved_versions(FcTable *tbl, ItemPointerData cur, uint16 from_tag,
					   LockTupleMode mode, FcRowConflict *conflict)
{
	uint64		slotno;

	memset(conflict, 0, sizeof(FcRowConflict));
	conflict->cmax = InvalidCommandId;

	/* one latched slot at a time */
	while (ItemPointerIsValid(&cur) && fc_tid_in_range(tbl, &cur, &slotno))
	{
		LWLock	   *lock = fc_slot_lock(tbl, slotno);
		FcSlotHeader *hdr = fc_slot_header(tbl, slotno);
		bool		next;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		if (!(hdr->flags & FC_SLOT_USED) || (hdr->flags & FC_SLOT_DEAD) ||
			hdr->moved_from != from_tag)
		{
			LWLockRelease(lock);
			break;
		}
		if (fc_xmax_live(hdr) &&
			(!(hdr->flags & FC_XMAX_UPDATED) || (hdr->flags & FC_XMAX_KEYS_UPDATED)) &&
			!TransactionIdIsCurrentTransactionId(hdr->xmax))
		{
			conflict->ctid = cur;
			conflict->xmax = hdr->xmax;
			if (!fc_xmax_committed(hdr))
			{
				conflict->wait_xid = hdr->xmax;
				LWLockRelease(lock);
				return FC_ROW_WAIT;
			}
			LWLockRelease(lock);
			return (hdr->flags & FC_XMAX_UPDATED) ? FC_ROW_UPDATED : FC_ROW_DELETED;
		}
		fc_add_row_lock(hdr, mode);
		next = (hdr->flags & FC_XMAX_UPDATED) && fc_xmax_live(hdr) &&
			ItemPointerIsValid(&hdr->next_tid);
		cur = hdr->next_tid;
		from_tag = fc_move_tag(slotno);
		LWLockRelease(lock);
		if (!next)
			break;
	}
	return FC_ROW_OK;
}

/*
 * The row version this backend's last successful table_tuple_lock() handed
 * to the executor, in which command.  With in-place updates the TID stays
 * the row's, so "did the lock move past the caller's version" cannot be
 * told from the TID as heap tells it: a BEFORE row trigger's fetch after
 * EvalPlanQual, or after ON CONFLICT's lock, locks the same version again,
 * and reporting it as new again sent the executor into EvalPlanQual where
 * it cannot be (a crash) or round and round (MERGE, partition moves).
 */
static struct
{
	LocalTransactionId lxid;
	CommandId	cid;
	RelFileNode node;
	uint64		slotno;
	TransactionId xmin;
}			fc_last_locked;

static bool
fc_locked_already(Relation rel, uint64 slotno, TransactionId xmin, CommandId cid)
{
	return fc_last_locked.lxid == MyProc->lxid && fc_last_locked.cid == cid &&
		RelFileNodeEquals(fc_last_locked.node, rel->rd_node) &&
		fc_last_locked.slotno == slotno && fc_last_locked.xmin == xmin;
}

static void
fc_remember_locked(Relation rel, uint64 slotno, TransactionId xmin, CommandId cid)
{
	fc_last_locked.lxid = MyProc->lxid;
	fc_last_locked.cid = cid;
	fc_last_locked.node = rel->rd_node;
	fc_last_locked.slotno = slotno;
	fc_last_locked.xmin = xmin;
}

TM_Result
fc_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
			  TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
			  LockWaitPolicy wait_policy, uint8 flags, TM_FailureData *tmfd)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	bool		follow = (flags & TUPLE_LOCK_FLAG_FIND_LAST_VERSION) != 0;
	bool		have_tuple_lock = false;
	ItemPointerData cur = *tid;
	TM_Result	result;

	/*
	 * With in-place updates a TID names the row, not one version.  Under
	 * READ COMMITTED a lock is always on the latest version (heap callers
	 * either ask for that, or found the TID with a dirty snapshot, as ON
	 * CONFLICT does); only transaction-snapshot isolation must report a
	 * version newer than the snapshot as a concurrent update.
	 */
	bool		latest = follow || !IsolationUsesXactSnapshot();

	tmfd->traversed = false;
	MultiXactIdSetOldestMember();

	for (;;)
	{
		uint64		slotno;
		LWLock	   *lock;
		char	   *sp;
		FcSlotHeader *hdr;
		FcRowConflict conflict;
		FcRowCheck	check;

		if (!fc_tid_in_range(tbl, &cur, &slotno))
		{
			tmfd->ctid = cur;
			tmfd->xmax = InvalidTransactionId;
			tmfd->cmax = InvalidCommandId;
			result = TM_Deleted;
			break;
		}
		lock = fc_slot_lock(tbl, slotno);
		sp = fc_slot_ptr(tbl, slotno);
		hdr = (FcSlotHeader *) sp;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		check = fc_check_row(hdr, slotno, cid, snapshot, mode, true, latest, &conflict);

		/*
		 * ON CONFLICT locks the newest version, which its dirty probe found:
		 * written by this command or a trigger it fired, heap calls that
		 * version invisible ("cannot affect row a second time").  A TID a
		 * scan found names the version the scan saw, which such a write
		 * modified: reported so, the executor skips the row, or fails if a
		 * trigger wrote it (see tid_versions.c).
		 */
		if (check == FC_ROW_SELF_MODIFIED && !follow &&
			!(flags & TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS) && hdr->cmin >= cid &&
			TransactionIdIsCurrentTransactionId(hdr->xmin) &&
			fc_take_probed_row(rel, &cur, hdr->xmin, hdr->cmin))
			check = FC_ROW_INVISIBLE;
		if (check == FC_ROW_OK)
		{
			FcVisible	v;
			bool		moved;
			bool		traversed = conflict.traversed;
			ItemPointerData next;
			FcVisible	scan_v;
			bool		follow_read = false;
			TransactionId live_xmin = hdr->xmin;

			/*
			 * A newer version than the snapshot's, committed: the executor
			 * re-evaluates its statement on it (EvalPlanQual), unless this
			 * command locked it already.
			 */
			bool		recheck = traversed && follow &&
				!fc_locked_already(rel, slotno, live_xmin, cid);

			fc_add_row_lock(hdr, mode);

			/*
			 * A registered call's read set follows the recheck to the
			 * version locked.  Without one, the executor goes on with the
			 * version its scan read, even if a newer one committed since
			 * the check above (KEY SHARE does not wait for an in-place
			 * updater), so the scan's read is the one that counts.
			 */
			if (recheck && unlikely(fc_read_set_active) && snapshot != NULL &&
				IsMVCCSnapshot(snapshot) &&
				fc_visible_version(hdr, fc_pp_live(sp, &tbl->layout), snapshot, &scan_v))
				follow_read = true;

			/*
			 * Hand back the latest version, except where a transaction
			 * snapshot locked a version older than the latest (KEY SHARE
			 * over a non-key update): then the one it sees, as heap does.
			 */
			if (!latest && snapshot != NULL && IsMVCCSnapshot(snapshot) &&
				fc_visible_version(hdr, fc_pp_live(sp, &tbl->layout), snapshot, &v))
				fc_store_version(slot, rel, slotno, &v);
			else if (fc_latest_version(hdr, fc_pp_live(sp, &tbl->layout), &v))
			{
				fc_store_version(slot, rel, slotno, &v);
				if (follow_read)
					fc_read_follow_row(tbl, slotno, hdr, scan_v.xmin, &v);
			}
			moved = mode == LockTupleKeyShare && (hdr->flags & FC_XMAX_UPDATED) &&
				fc_xmax_live(hdr) && ItemPointerIsValid(&hdr->next_tid) &&
				!ItemPointerIndicatesMovedPartitions(&hdr->next_tid);
			next = hdr->next_tid;
			LWLockRelease(lock);

			if (moved)
			{
				check = fc_lock_moved_versions(tbl, next, fc_move_tag(slotno), mode,
												   &conflict);
				if (check == FC_ROW_WAIT)
				{
					ItemPointerData waittid = conflict.ctid;
					bool		waited_lock = false;

					if (!fc_wait_for_conflict(rel, &waittid, &conflict, mode, wait_policy,
											  XLTW_LockUpdated, &waited_lock))
					{
						fc_release_tuple_lock(rel, &waittid, mode, &waited_lock);
						(void) fc_row_check_to_tm(check, &conflict, tmfd);
						result = TM_WouldBlock;
						break;
					}
					fc_release_tuple_lock(rel, &waittid, mode, &waited_lock);
					continue;	/* lock again from the start */
				}
				if (check != FC_ROW_OK)
				{
					result = fc_row_check_to_tm(check, &conflict, tmfd);
					break;
				}
			}
			if (recheck)
				tmfd->traversed = true;
			fc_remember_locked(rel, slotno, live_xmin, cid);
			if (!tbl->is_temp)
				fc_locked_rows_note(tbl, slotno);
			result = TM_Ok;
			break;
		}

		/* like heap, hand back the row as it stands, whatever the outcome */
		if (check != FC_ROW_WAIT)
		{
			FcVisible	v;

			fc_live_version(hdr, fc_pp_live(sp, &tbl->layout), &v);
			fc_store_version(slot, rel, slotno, &v);
		}
		LWLockRelease(lock);

		if (check == FC_ROW_WAIT)
		{
			if (!fc_wait_for_conflict(rel, &cur, &conflict, mode, wait_policy,
									  XLTW_Lock, &have_tuple_lock))
			{
				(void) fc_row_check_to_tm(check, &conflict, tmfd);
				result = TM_WouldBlock;
				break;
			}
			continue;
		}
		if (check == FC_ROW_UPDATED && follow &&
			ItemPointerIndicatesMovedPartitions(&conflict.ctid))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("tuple to be locked was already moved to another partition due to concurrent update")));
		if (check == FC_ROW_UPDATED && follow &&
			!ItemPointerEquals(&conflict.ctid, &cur))
		{
			/* moved by an update that changed an indexed column: chase it */
			fc_release_tuple_lock(rel, &cur, mode, &have_tuple_lock);
			cur = conflict.ctid;
			tmfd->traversed = true;
			continue;
		}
		result = fc_row_check_to_tm(check, &conflict, tmfd);
		break;
	}
	fc_release_tuple_lock(rel, &cur, mode, &have_tuple_lock);
	slot->tts_tableOid = RelationGetRelid(rel);
	*tid = cur;					/* the caller continues with the latest version */
	fc_wait_read_durable();
	return result;
}
