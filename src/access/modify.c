/*-------------------------------------------------------------------------
 *
 * modify.c
 *	  INSERT, COPY, UPDATE and DELETE on fastckpt tables.
 *
 * Updates happen in place: the replaced version goes to undo, the slot and
 * its TID stay, and no index entry is added.  An update that changes any
 * column an index depends on (key, expression or predicate) instead
 * deletes the row and inserts it into a new slot, so that no index entry
 * ever points at a row whose indexed values changed under it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "pgstat.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/call_replay.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/prepared.h"
#include "txn/write_set.h"

/*
 * Writers reclaim undo in batches, once a table holds more than a few old
 * versions: reclaiming after every update would make hot rows' latches and
 * the table's undo lock a meeting point for all writers.
 */
#define FC_RECLAIM_THRESHOLD	64
#define FC_RECLAIM_BATCH		32

/*
 * System columns of RETURNING, as heap_insert and heap_update leave them in
 * the slot's tuple: this transaction made the version, and the row's
 * lockers (ours too: ON CONFLICT DO UPDATE locks the row first) carry over.
 */
static void
fc_mark_written(TupleTableSlot *slot, CommandId cid, TransactionId lockers,
				bool lockers_multi)
{
	HeapTuple	stored;

	if (!TTS_IS_HEAPTUPLE(slot) || ((HeapTupleTableSlot *) slot)->tuple == NULL)
		return;
	stored = ((HeapTupleTableSlot *) slot)->tuple;
	stored->t_self = slot->tts_tid;
	fc_set_system_columns(stored->t_data, GetCurrentTransactionId(), cid,
						  InvalidTransactionId, lockers, lockers_multi);
	stored->t_data->t_ctid = slot->tts_tid;
}

uint64
fc_insert_row(Relation rel, FcTable *tbl, HeapTuple tuple, TransactionId xid,
			  CommandId cid, uint16 extra_flags, uint32 spec_token, uint16 moved_from)
{
	uint64		slotno;
	LWLock	   *lock;
	char	   *sp;
	FcSlotHeader *hdr;

	/* a replayed call puts its rows where the call did */
	if (unlikely(fc_replaying_call))
		slotno = fc_call_replay_slot(tbl);
	else
		slotno = fc_slot_alloc(tbl, RelationGetRelid(rel));
	if (unlikely(fc_call_active))
		fc_call_note_slot(tbl, tbl->key.spcid, tbl->key.relnode, slotno);
	lock = fc_slot_lock(tbl, slotno);
	sp = fc_slot_ptr(tbl, slotno);
	hdr = (FcSlotHeader *) sp;

	/* record it first: if anything below fails, abort finds the slot */
	fc_write_set_add(tbl, slotno, FC_OP_INSERT, xid, InvalidTransactionId);

	LWLockAcquire(lock, LW_EXCLUSIVE);
	fc_slot_set_new_row(tbl, sp, tuple->t_data, tuple->t_len, xid, cid);
	hdr->moved_from = moved_from;
	if (extra_flags & FC_SPECULATIVE)
	{
		/* the token rides in next_tid, as heap keeps it in t_ctid */
		BlockIdSet(&hdr->next_tid.ip_blkid, spec_token);
		hdr->next_tid.ip_posid = 0;
	}
	else
		ItemPointerSetInvalid(&hdr->next_tid);
	hdr->flags = FC_SLOT_USED | extra_flags;
	LWLockRelease(lock);
	return slotno;
}

static void
fc_insert_one(Relation rel, FcTable *tbl, TupleTableSlot *slot, CommandId cid,
			  uint16 extra_flags, uint32 spec_token)
{
	HeapTuple	tuple = fc_form_image(rel, tbl, slot);
	uint64		slotno;

	slotno = fc_insert_row(rel, tbl, tuple, GetCurrentTransactionId(), cid,
						   extra_flags, spec_token, 0);
	slot->tts_tableOid = RelationGetRelid(rel);
	fc_slot_to_tid(slotno, &slot->tts_tid);
	fc_mark_written(slot, cid, InvalidTransactionId, false);
	fc_ssi_wrote(rel, NULL);
}

static FcTable *
fc_begin_write(Relation rel)
{
	fc_gate_wait(rel);
	fc_log_check_writable(RelationGetRelationName(rel));
	return fc_table_for_rel(rel);
}

void
fc_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid, int options,
				struct BulkInsertStateData *bistate)
{
	FcTable    *tbl = fc_begin_write(rel);

	fc_insert_one(rel, tbl, slot, cid, 0, 0);
	pgstat_count_heap_insert(rel, 1);
}

void
fc_tuple_insert_speculative(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate,
							uint32 specToken)
{
	FcTable    *tbl = fc_begin_write(rel);

	fc_insert_one(rel, tbl, slot, cid, FC_SPECULATIVE, specToken);
	pgstat_count_heap_insert(rel, 1);
}

/*
 * End of a speculative insertion: confirm it, or "super-delete" it so that
 * it is invisible to everyone at once (ON CONFLICT found a conflict).
 */
void
fc_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
							  uint32 specToken, bool succeeded)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	uint64		slotno;
	LWLock	   *lock;
	FcSlotHeader *hdr;

	if (!fc_tid_in_range(tbl, &slot->tts_tid, &slotno))
		elog(ERROR, "speculative insertion into \"%s\" lost its slot",
			 RelationGetRelationName(rel));
	lock = fc_slot_lock(tbl, slotno);
	hdr = fc_slot_header(tbl, slotno);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	hdr->flags &= ~FC_SPECULATIVE;
	ItemPointerSetInvalid(&hdr->next_tid);
	if (!succeeded)
		hdr->flags |= FC_XMIN_ABORTED;
	LWLockRelease(lock);
	if (!succeeded)
		fc_write_set_forget_insert(tbl, slotno);
}

void
fc_multi_insert(Relation rel, TupleTableSlot **slots, int nslots, CommandId cid,
				int options, struct BulkInsertStateData *bistate)
{
	FcTable    *tbl = fc_begin_write(rel);

	for (int i = 0; i < nslots; i++)
		fc_insert_one(rel, tbl, slots[i], cid, 0, 0);
	pgstat_count_heap_insert(rel, nslots);
}

void
fc_finish_bulk_insert(Relation rel, int options)
{
}

/*
 * Does the new row differ from the stored image in any column of `attrs`
 * (a bitmap offset by FirstLowInvalidHeapAttributeNumber)?  Binary
 * comparison, as heap's HOT check: a false "changed" only costs an
 * out-of-place update.
 */
static bool
fc_columns_changed(Relation rel, Bitmapset *attrs, const char *old_image,
				   uint32 old_len, HeapTuple newtup)
{
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTupleData oldtup;
	int			x = -1;

	oldtup.t_len = old_len;
	oldtup.t_data = (HeapTupleHeader) old_image;
	oldtup.t_tableOid = RelationGetRelid(rel);
	ItemPointerSetInvalid(&oldtup.t_self);

	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attnum = x + FirstLowInvalidHeapAttributeNumber;
		Form_pg_attribute att;
		bool		null1,
					null2;
		Datum		v1,
					v2;

		if (attnum <= 0)
			return true;		/* whole-row or system column reference */
		att = TupleDescAttr(desc, attnum - 1);
		v1 = heap_getattr(&oldtup, attnum, desc, &null1);
		v2 = heap_getattr(newtup, attnum, desc, &null2);
		if (null1 != null2)
			return true;
		if (!null1 && !datumIsEqual(v1, v2, att->attbyval, att->attlen))
			return true;
	}
	return false;
}

/* A user's trigger, not PostgreSQL's foreign-key or deferred unique check. */
static bool
fc_is_user_trigger(Trigger *trigger)
{
	return RI_FKey_trigger_type(trigger->tgfoid) == RI_TRIGGER_NONE &&
		trigger->tgfoid != F_UNIQUE_KEY_RECHECK;
}

static bool
fc_has_user_after_row_trigger(TriggerDesc *trigdesc, int event)
{
	for (int i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *trigger = &trigdesc->triggers[i];

		if (TRIGGER_TYPE_MATCHES(trigger->tgtype, TRIGGER_TYPE_ROW,
								 TRIGGER_TYPE_AFTER, event) &&
			fc_is_user_trigger(trigger))
			return true;
	}
	return false;
}

/*
 * Triggers read row versions back by TID after the write that made them:
 * AFTER ROW UPDATE triggers the old and the new version when they fire (at
 * the end of the statement, or at commit if deferred), an UPDATE's OLD
 * TABLE the old version right after the update, AFTER ROW INSERT triggers
 * the inserted version when they fire.  An in-place update would hand them
 * a later version, so on such tables an update moves the row and the old
 * slot keeps the old version: always when UPDATE triggers or an OLD TABLE
 * read it, and for rows this transaction inserted (whose INSERT triggers
 * may still be pending) when INSERT triggers do.  Foreign-key triggers are
 * exempt: they read the current row, and fire on key changes, which move
 * the row anyway (keys are indexed); so is the deferred unique check, which
 * reads only the new row.
 */
static bool
fc_update_triggers_need_old_row(Relation rel)
{
	TriggerDesc *trigdesc = rel->trigdesc;

	if (trigdesc != NULL &&
		(trigdesc->trig_update_old_table ||
		 (trigdesc->trig_update_after_row &&
		  fc_has_user_after_row_trigger(trigdesc, TRIGGER_TYPE_UPDATE))))
		return true;

	/* an UPDATE of a parent fills its OLD TABLE from the children too */
	return fc_ancestor_captures_old_rows(rel);
}

static bool
fc_insert_triggers_need_new_row(Relation rel)
{
	TriggerDesc *trigdesc = rel->trigdesc;

	return trigdesc != NULL && trigdesc->trig_insert_after_row &&
		fc_has_user_after_row_trigger(trigdesc, TRIGGER_TYPE_INSERT);
}

/* Shared by UPDATE and DELETE: wait out conflicts, return the check result. */
static FcRowCheck
fc_lock_for_write(Relation rel, FcTable *tbl, uint64 slotno, ItemPointer tid,
				  CommandId cid, Snapshot snapshot, LockTupleMode mode,
				  bool wait, XLTW_Oper oper, bool *have_tuple_lock,
				  FcRowConflict *conflict)
{
	LWLock	   *lock = fc_slot_lock(tbl, slotno);
	FcSlotHeader *hdr = fc_slot_header(tbl, slotno);

	for (;;)
	{
		FcRowCheck	check;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		check = fc_check_row(hdr, slotno, cid, snapshot, mode, false, false, conflict);
		if (check != FC_ROW_WAIT)
			return check;		/* latch still held */
		LWLockRelease(lock);
		if (!wait)
			return check;
		(void) fc_wait_for_conflict(rel, tid, conflict, mode, LockWaitBlock,
									oper, have_tuple_lock);
	}
}

/* The slot a TID the executor hands us names; it must exist. */
static uint64
fc_slot_of_tid(Relation rel, FcTable *tbl, ItemPointer tid)
{
	uint64		slotno;

	if (!fc_tid_in_range(tbl, tid, &slotno))
		elog(ERROR, "invalid TID (%u,%u) in fastckpt table \"%s\"",
			 ItemPointerGetBlockNumberNoCheck(tid),
			 ItemPointerGetOffsetNumberNoCheck(tid), RelationGetRelationName(rel));
	return slotno;
}

/* RI checks in REPEATABLE READ pass a crosscheck snapshot. */
static bool
fc_crosscheck_fails(FcSlotHeader *hdr, Snapshot crosscheck)
{
	return crosscheck != InvalidSnapshot &&
		!fc_xmin_visible_mvcc(hdr->xmin, hdr->cmin, &hdr->flags, crosscheck);
}

TM_Result
fc_tuple_delete(Relation rel, ItemPointer tid, CommandId cid, Snapshot snapshot,
				Snapshot crosscheck, bool wait, TM_FailureData *tmfd,
				bool changingPart)
{
	FcTable    *tbl = fc_begin_write(rel);
	TransactionId xid = GetCurrentTransactionId();
	bool		have_tuple_lock = false;
	FcRowConflict conflict;
	FcRowCheck	check;
	uint64		slotno;
	FcSlotHeader *hdr;

	slotno = fc_slot_of_tid(rel, tbl, tid);
	hdr = fc_slot_header(tbl, slotno);

	check = fc_lock_for_write(rel, tbl, slotno, tid, cid, snapshot,
							  LockTupleExclusive, wait, XLTW_Delete,
							  &have_tuple_lock, &conflict);
	if (check == FC_ROW_WAIT)
	{
		fc_release_tuple_lock(rel, tid, LockTupleExclusive, &have_tuple_lock);
		return fc_row_check_to_tm(check, &conflict, tmfd);
	}
	if (check == FC_ROW_OK && fc_crosscheck_fails(hdr, crosscheck))
	{
		check = FC_ROW_UPDATED;
		conflict.xmax = hdr->xmin;
	}
	if (check != FC_ROW_OK)
	{
		LWLockRelease(fc_slot_lock(tbl, slotno));
		fc_release_tuple_lock(rel, tid, LockTupleExclusive, &have_tuple_lock);
		return fc_row_check_to_tm(check, &conflict, tmfd);
	}

	fc_write_set_add(tbl, slotno, FC_OP_DELETE, xid, hdr->xmin);
	hdr->xmax = xid;
	hdr->cmax = cid;
	hdr->flags &= ~FC_XMAX_BITS;
	if (changingPart)
	{
		/*
		 * The row moves to another partition.  Mark it as heap marks t_ctid,
		 * so that a concurrent writer or locker is told so (an error) instead
		 * of taking the row for deleted and silently doing nothing.
		 */
		hdr->flags |= FC_XMAX_UPDATED | FC_XMAX_KEYS_UPDATED;
		ItemPointerSetMovedPartitions(&hdr->next_tid);
	}
	else
		ItemPointerSetInvalid(&hdr->next_tid);
	LWLockRelease(fc_slot_lock(tbl, slotno));

	fc_release_tuple_lock(rel, tid, LockTupleExclusive, &have_tuple_lock);
	fc_ssi_wrote(rel, tid);
	pgstat_count_heap_delete(rel);
	return TM_Ok;
}

/*
 * Reclaim a batch of old versions no snapshot needs any more.  The
 * statistics count every update's old version as a dead row; these are
 * gone without VACUUM, as heap's page pruning reports.  Otherwise
 * autovacuum would scan the whole table every few hundred thousand
 * updates for nothing.
 */
static void
fc_reclaim_old_versions(Relation rel, FcTable *tbl)
{
	int			reclaimed = fc_undo_reclaim(tbl, GlobalVisTestFor(rel), FC_RECLAIM_BATCH);

	if (reclaimed > 0)
		pgstat_update_heap_dead_tuples(rel, reclaimed);
}

TM_Result
fc_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
				CommandId cid, Snapshot snapshot, Snapshot crosscheck,
				bool wait, TM_FailureData *tmfd, LockTupleMode *lockmode,
				bool *update_indexes)
{
	FcTable    *tbl = fc_begin_write(rel);
	Oid			relid = RelationGetRelid(rel);
	TransactionId xid = GetCurrentTransactionId();
	HeapTuple	newtup = fc_form_image(rel, tbl, slot);
	Bitmapset  *index_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_ALL);
	Bitmapset  *key_attrs = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_KEY);
	bool		force_move = fc_update_triggers_need_old_row(rel);
	bool		move_own_inserts = fc_insert_triggers_need_new_row(rel);
	bool		lock_latest = !IsolationUsesXactSnapshot() &&
		crosscheck == InvalidSnapshot;
	bool		have_tuple_lock = false;
	bool		moved;
	bool		keys_changed;
	LockTupleMode mode;
	FcRowConflict conflict;
	FcRowCheck	check;
	uint64		slotno;
	char	   *sp;
	FcSlotHeader *hdr;
	FcUndo	   *undo;
	TransactionId row_xlock;
	uint16		row_xlock_info;
	TransactionId shown_lockers;
	bool		shown_multi;

	fc_forget_replaced_row();
	slotno = fc_slot_of_tid(rel, tbl, otid);
	sp = fc_slot_ptr(tbl, slotno);
	hdr = (FcSlotHeader *) sp;

	/*
	 * Allocate before latching: allocation may fail with "memory full".
	 * With no free record left, first reclaim what no snapshot needs any
	 * more (a failed statement's versions, or those a snapshot that has
	 * ended kept): the arena may have no page left for a new one.
	 */
	if (dlist_is_empty(&tbl->undo_partial))
		fc_reclaim_old_versions(rel, tbl);
	undo = fc_undo_alloc(tbl, relid);

	/*
	 * Whether indexed columns change decides the lock strength, so it is
	 * computed against the live image under the latch; if the live image
	 * is not the caller's version, the check reports that anyway.
	 */
	for (;;)
	{
		LWLockAcquire(fc_slot_lock(tbl, slotno), LW_EXCLUSIVE);
		moved = force_move ||
			(move_own_inserts && TransactionIdIsCurrentTransactionId(hdr->xmin)) ||
			(!bms_is_empty(index_attrs) &&
			 fc_columns_changed(rel, index_attrs, fc_pp_live(sp, &tbl->layout),
								hdr->live_len, newtup));
		keys_changed = moved && !bms_is_empty(key_attrs) &&
			fc_columns_changed(rel, key_attrs, fc_pp_live(sp, &tbl->layout),
							   hdr->live_len, newtup);
		mode = keys_changed ? LockTupleExclusive : LockTupleNoKeyExclusive;
		check = fc_check_row(hdr, slotno, cid, snapshot, mode, false, false, &conflict);

		/*
		 * A prepared transaction's lock (KEY SHARE: the others stop any
		 * update) keeps the row in the slot its file names: wait for it to
		 * finish rather than take the lock along (prepared_row_locks.c).
		 */
		if (check == FC_ROW_OK && moved &&
			fc_prepared_lock_pins_row(hdr, &conflict.wait_xid))
		{
			check = FC_ROW_WAIT;
			conflict.holds_lock = fc_current_xact_holds_lock(hdr, LockTupleKeyShare);
		}
		if (check == FC_ROW_UPDATED && lock_latest &&
			ItemPointerEquals(&conflict.ctid, otid))
		{
			FcRowConflict lock_conflict;
			FcRowCheck	lock_check;

			/* the executor locks the latest version next: do it now */
			lock_check = fc_lock_latest_for_update(hdr, slotno, cid, snapshot,
												   mode, &lock_conflict);
			if (lock_check == FC_ROW_WAIT)
			{
				check = lock_check;
				conflict = lock_conflict;
			}
		}
		if (check != FC_ROW_WAIT)
			break;
		LWLockRelease(fc_slot_lock(tbl, slotno));
		if (!wait)
			break;
		/* the wait may end in an error (deadlock, lock_timeout, a cancel) */
		fc_undo_release_unused(tbl, undo);
		(void) fc_wait_for_conflict(rel, otid, &conflict, mode, LockWaitBlock,
									XLTW_Update, &have_tuple_lock);
		undo = fc_undo_alloc(tbl, relid);
	}
	if (check == FC_ROW_OK && fc_crosscheck_fails(hdr, crosscheck))
	{
		check = FC_ROW_UPDATED;
		conflict.xmax = hdr->xmin;
	}
	/* the executor re-locks the row in this mode after a conflict */
	*lockmode = mode;
	if (check != FC_ROW_OK)
	{
		if (check != FC_ROW_WAIT)
			LWLockRelease(fc_slot_lock(tbl, slotno));
		fc_undo_release_unused(tbl, undo);
		bms_free(index_attrs);
		bms_free(key_attrs);
		fc_release_tuple_lock(rel, otid, mode, &have_tuple_lock);
		return fc_row_check_to_tm(check, &conflict, tmfd);
	}

	row_xlock = hdr->xlock;
	row_xlock_info = hdr->xlock_info;
	if (!moved)
	{
		/* in place: the old version goes to undo, the TID stays */
		fc_write_set_add(tbl, slotno, FC_OP_UPDATE, xid, hdr->xmin);
		fc_undo_push_live(tbl, sp, slotno, undo, xid);

		memcpy(fc_pp_live(sp, &tbl->layout), newtup->t_data, newtup->t_len);
		hdr->live_len = newtup->t_len;
		hdr->xmin = xid;
		hdr->cmin = cid;
		hdr->xmax = InvalidTransactionId;
		hdr->flags &= ~(FC_XMIN_HINTS | FC_XMAX_BITS | FC_SPECULATIVE);
		LWLockRelease(fc_slot_lock(tbl, slotno));

		fc_undo_enqueue(tbl, undo);
		/* only foreign-key triggers come next: the others move the row */
		if (rel->trigdesc != NULL && rel->trigdesc->trig_update_after_row)
			fc_note_replaced_row(rel, otid, cid, undo);
		slot->tts_tid = *otid;
		*update_indexes = false;
		pgstat_count_heap_update(rel, true);
		if (tbl->undo_live > FC_RECLAIM_THRESHOLD)
			fc_reclaim_old_versions(rel, tbl);
	}
	else
	{
		uint64		newslot;
		TransactionId lockers;
		uint16		lockers_info;

		/* out of place: mark the old row moved, then insert the new one */
		fc_write_set_add(tbl, slotno, FC_OP_DELETE, xid, hdr->xmin);
		hdr->xmax = xid;
		hdr->cmax = cid;
		hdr->flags &= ~FC_XMAX_BITS;
		hdr->flags |= FC_XMAX_UPDATED | (keys_changed ? FC_XMAX_KEYS_UPDATED : 0);
		ItemPointerSetInvalid(&hdr->next_tid);
		LWLockRelease(fc_slot_lock(tbl, slotno));
		fc_undo_release_unused(tbl, undo);
		/* testing: hold the move where the old row names no new one yet */
		if (unlikely(fc_test_move_pause_ms > 0))
			pg_usleep(fc_test_move_pause_ms * 1000L);

		newslot = fc_insert_row(rel, tbl, newtup, xid, cid, 0, 0, fc_move_tag(slotno));
		fc_slot_to_tid(newslot, &slot->tts_tid);

		/*
		 * Publish the link, then take the old slot's lockers along: one
		 * that locks the old slot after this sees the link and follows it.
		 */
		LWLockAcquire(fc_slot_lock(tbl, slotno), LW_EXCLUSIVE);
		hdr->next_tid = slot->tts_tid;
		lockers = hdr->xlock;
		lockers_info = hdr->xlock_info;
		LWLockRelease(fc_slot_lock(tbl, slotno));
		if (TransactionIdIsValid(lockers))
		{
			MultiXactIdSetOldestMember();
			LWLockAcquire(fc_slot_lock(tbl, newslot), LW_EXCLUSIVE);
			fc_carry_lockers(fc_slot_header(tbl, newslot), lockers, lockers_info);
			LWLockRelease(fc_slot_lock(tbl, newslot));
		}
		*update_indexes = true;
		pgstat_count_heap_update(rel, false);
	}

	fc_release_tuple_lock(rel, otid, mode, &have_tuple_lock);
	fc_ssi_wrote(rel, otid);
	slot->tts_tableOid = relid;
	shown_lockers = fc_row_lockers(row_xlock, row_xlock_info, &shown_multi);
	fc_mark_written(slot, cid, shown_lockers, shown_multi);
	bms_free(index_attrs);
	bms_free(key_attrs);
	return TM_Ok;
}
