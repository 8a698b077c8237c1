/*-------------------------------------------------------------------------
 *
 * prepared_row_locks.c
 *	  Row locks of prepared transactions, kept across restarts.
 *
 * A prepared transaction holds its row locks (FOR UPDATE, FOR SHARE, the
 * KEY SHARE locks of foreign key checks) until COMMIT or ROLLBACK
 * PREPARED, restarts included, as heap keeps them in its tuples' xmax.
 * Ours live in the slots (xlock), in shared memory, so:
 *
 * PREPARE TRANSACTION adds to the transaction's file (prepared.c) one
 * entry per row it holds locked, with the strongest mode it holds there,
 * found through the rows it noted (locked_rows.c).  A row that another
 * transaction moved to a new slot since (an update of an indexed column
 * that kept the key, which a KEY SHARE lock lets through) is followed to
 * where it lives now, once that mover has finished; a mover prepared
 * itself is not waited for: both slots get an entry, each to count as that
 * mover turns out.
 *
 * Startup recovery puts the locks back as the prepared transaction's own,
 * joined in a MultiXactId where prepared transactions share a row.
 *
 * The file names slots, so a row stays in its slot while a prepared
 * transaction locks it: a move of it waits for that transaction to finish
 * (heap would let it go ahead).  A PREPARE registers its transaction
 * (prepared.c) before it looks at its rows, and a mover checks the
 * registry under the latch of the slot it moves the row from, which the
 * PREPARE takes too: one of them sees the other.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/multixact.h"
#include "access/subtrans.h"
#include "access/transam.h"
#include "access/xact.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "txn/prepared.h"
#include "txn/write_set.h"

StaticAssertDecl(LockTupleKeyShare == FC_PREP_LOCK_KEY_SHARE &&
				 LockTupleExclusive == FC_PREP_LOCK_EXCLUSIVE,
				 "lock entries store LockTupleMode numbers");

typedef struct FcLockEntries
{
	StringInfo	buf;
	uint32	   *nentries;
} FcLockEntries;

static void
fc_append_lock_entry(FcLockEntries *out, FcTable *tbl, uint64 slotno,
					 LockTupleMode mode, uint16 cond, TransactionId mover)
{
	fc_prepared_slot e;

	memset(&e, 0, sizeof(e));
	e.spcid = tbl->key.spcid;
	e.relnode = tbl->key.relnode;
	e.slotno = slotno;
	e.op = FC_PREP_LOCK;
	e.lock_mode = (uint8) mode;
	e.xmax_flags = cond;
	e.lock_mover = mover;
	appendBinaryStringInfo(out->buf, (char *) &e, sizeof(e));
	(*out->nentries)++;
}

static bool fc_locker_is_prepared(TransactionId xid, TransactionId *top);

/*
 * The entry for a row noted as locked, if the transaction still holds a
 * lock on it: in this slot, or in the one a move that kept the key took it
 * to.  A committed move is followed; a running one waited for, unless its
 * transaction is prepared: then the lock goes into both slots, each entry
 * to count as that transaction turns out (FC_PREP_LOCK_IF_*).
 */
static void
fc_add_lock_entry(FcTable *tbl, uint64 slotno, void *arg)
{
	FcLockEntries *out = (FcLockEntries *) arg;
	uint16		from_tag = 0;	/* 0: the slot noted, no link to check */
	uint16		cond = 0;		/* FC_PREP_LOCK_IF_*, past a prepared mover */
	TransactionId cond_mover = InvalidTransactionId;

	/*
	 * No locker at all (read without the latch: ours cannot go away, and
	 * the slots of a large table are mostly like this).
	 */
	if (slotno >= fc_table_nslots(tbl) ||
		!TransactionIdIsValid(fc_slot_header(tbl, slotno)->xlock))
		return;
	for (;;)
	{
		LWLock	   *lock;
		FcSlotHeader *hdr;
		LockTupleMode mode;
		bool		held;
		bool		live;
		bool		own;
		bool		running;
		bool		keep_key_move;
		TransactionId mover;
		ItemPointerData next;

		if (slotno >= fc_table_nslots(tbl))
			return;
		lock = fc_slot_lock(tbl, slotno);
		hdr = fc_slot_header(tbl, slotno);
		LWLockAcquire(lock, LW_EXCLUSIVE);
		if (!(hdr->flags & FC_SLOT_USED) || (hdr->flags & FC_SLOT_DEAD) ||
			(from_tag != 0 && hdr->moved_from != from_tag))
		{
			LWLockRelease(lock);
			return;
		}

		/*
		 * Another transaction's move target, not committed: reached from
		 * the row's old slot, which keeps our lock too.
		 */
		if (from_tag == 0 && hdr->moved_from != 0 &&
			!TransactionIdIsCurrentTransactionId(hdr->xmin) &&
			!fc_xmin_committed(hdr->xmin, &hdr->flags))
		{
			LWLockRelease(lock);
			return;
		}
		held = fc_current_xact_lock(hdr, &mode);
		live = fc_xmax_live(hdr);
		own = live && TransactionIdIsCurrentTransactionId(hdr->xmax);
		running = live && !own && fc_xmax_running(hdr);
		mover = hdr->xmax;
		keep_key_move = (hdr->flags & FC_XMAX_UPDATED) &&
			!(hdr->flags & FC_XMAX_KEYS_UPDATED) &&
			ItemPointerIsValid(&hdr->next_tid) &&
			!ItemPointerIndicatesMovedPartitions(&hdr->next_tid);
		next = hdr->next_tid;
		LWLockRelease(lock);

		if (!live)
		{
			if (held)
				fc_append_lock_entry(out, tbl, slotno, mode, cond, cond_mover);
			return;
		}
		/*
		 * Deleted or moved by us: the write holds the row, though less
		 * strongly than a FOR UPDATE lock before a move that kept the key
		 * (heap keeps the stronger mode); its new slot is ours alone.
		 */
		if (own)
		{
			if (held)
				fc_append_lock_entry(out, tbl, slotno, mode, cond, cond_mover);
			return;
		}
		if (running)
		{
			TransactionId top;

			/* a move (or its link) under way: wait for its outcome */
			if (!fc_locker_is_prepared(mover, &top))
			{
				if (TransactionIdIsInProgress(mover))
					XactLockTableWait(mover, NULL, NULL, XLTW_None);
				else
				{
					/* ROLLBACK PREPARED putting the rows back: briefly */
					pg_usleep(1000L);
					CHECK_FOR_INTERRUPTS();
				}
				continue;
			}
			/*
			 * The row stays here if the mover does not commit; a version
			 * that mover made itself and moved on lives in neither case.
			 */
			if (held && !(cond == FC_PREP_LOCK_IF_COMMITTED && top == cond_mover))
				fc_append_lock_entry(out, tbl, slotno, mode,
									 FC_PREP_LOCK_IF_NOT_COMMITTED, top);
			if (!keep_key_move)
				return;
			cond = FC_PREP_LOCK_IF_COMMITTED;
			cond_mover = top;
		}
		else if (!keep_key_move)
			return;				/* deleted */
		from_tag = fc_move_tag(slotno);
		if (!fc_tid_in_range(tbl, &next, &slotno))
			return;
	}
}

/*
 * PREPARE TRANSACTION: an entry per row the transaction holds locked.
 * Past 65,536 noted rows (locked_rows.c) every slot is visited, and the
 * new slot of a committed move gets its entry twice (as such, and followed
 * from the old one; a move may commit while the slots are visited): no
 * harm.
 */
void
fc_prepared_add_lock_entries(StringInfo buf, uint32 *nentries)
{
	FcLockEntries out;

	out.buf = buf;
	out.nentries = nentries;
	fc_locked_rows_foreach(fc_add_lock_entry, &out);
}

/* Is this locker (not us, running) a prepared transaction, or preparing? */
static bool
fc_locker_is_prepared(TransactionId xid, TransactionId *top)
{
	if (TransactionIdIsCurrentTransactionId(xid) || !TransactionIdIsInProgress(xid))
		return false;
	*top = SubTransGetTopmostTransaction(xid);
	return fc_prepared_xid_registered(*top);
}

/*
 * Would moving this row to another slot take a prepared transaction's lock
 * along?  Then *wait_xid is the transaction to wait for.  Slot latch held.
 */
bool
fc_prepared_lock_pins_row(FcSlotHeader *hdr, TransactionId *wait_xid)
{
	MultiXactMember *members;
	int			n;
	bool		found = false;

	if (!TransactionIdIsValid(hdr->xlock) || !fc_prepared_any_registered())
		return false;
	if (!(hdr->xlock_info & FC_XLOCK_MULTI))
		return fc_locker_is_prepared(hdr->xlock, wait_xid);
	n = GetMultiXactIdMembers(hdr->xlock, &members, false, true);
	for (int i = 0; i < n && !found; i++)
		found = fc_locker_is_prepared(members[i].xid, wait_xid);
	if (n > 0)
		pfree(members);
	return found;
}

/*
 * Does a lock entry's condition hold?  Its mover is prepared still (its
 * move is undecided: both slots keep the lock), or committed, or not.  One
 * too old for the commit log to tell ended long ago; the row's slot then
 * decides (a lock on a slot with no row is left).
 */
static bool
fc_lock_condition_holds(const fc_prepared_slot *s)
{
	TransactionId mover = s->lock_mover;

	if (s->xmax_flags == FC_PREP_LOCK_ALWAYS || !TransactionIdIsNormal(mover) ||
		TransactionIdPrecedes(mover, ShmemVariableCache->oldestClogXid) ||
		TransactionIdIsInProgress(mover))
		return true;
	return TransactionIdDidCommit(mover) ==
		(s->xmax_flags == FC_PREP_LOCK_IF_COMMITTED);
}

/*
 * Startup recovery, after the rows of every transaction still prepared are
 * back (a lock may be on a row another one moved): a transaction's locks,
 * in a transaction that called MultiXactIdSetOldestMember (a lock joining
 * another's makes a MultiXactId).  A lock on a row that is not there (it
 * cannot be gone: the lock kept deleters out) is reported and left;
 * nothing else depends on it.
 */
void
fc_prepared_restore_locks(const fc_prepared_header *hdr, uint32 *nlocks)
{
	TransactionId xid = XidFromFullTransactionId(FullTransactionIdFromU64(hdr->fxid));
	fc_prepared_cursor cur;
	const fc_prepared_slot *s;
	const char *image;

	*nlocks = 0;
	fc_prepared_cursor_init(&cur, hdr);
	while (fc_prepared_next(&cur, &s, &image))
	{
		FcTable    *tbl;

		if (s->op != FC_PREP_LOCK || !fc_lock_condition_holds(s))
			continue;
		tbl = fc_prepared_entry_table(hdr, s);
		if (tbl == NULL || s->slotno >= fc_table_nslots(tbl) ||
			!(fc_slot_header(tbl, s->slotno)->flags & FC_SLOT_USED))
		{
			ereport(WARNING,
					(errmsg("pg_fastckpt: prepared transaction %u (\"%s\") locked slot " UINT64_FORMAT " of fastckpt storage %u of database %u, which holds no row now; that lock is not put back",
							xid, hdr->gid, (uint64) s->slotno, s->relnode, hdr->dbid)));
			continue;
		}
		fc_restore_row_lock(fc_slot_header(tbl, s->slotno), xid,
							(LockTupleMode) s->lock_mode);
		(*nlocks)++;
	}
}
