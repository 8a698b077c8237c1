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
 * where it lives now, once that mover has finished.
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
#include "access/xact.h"
#include "lib/stringinfo.h"
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
					 LockTupleMode mode)
{
	fc_prepared_slot e;

	memset(&e, 0, sizeof(e));
	e.spcid = tbl->key.spcid;
	e.relnode = tbl->key.relnode;
	e.slotno = slotno;
	e.op = FC_PREP_LOCK;
	e.lock_mode = (uint8) mode;
	appendBinaryStringInfo(out->buf, (char *) &e, sizeof(e));
	(*out->nentries)++;
}

/*
 * The entry for a row noted as locked, if the transaction still holds a
 * lock on it: in this slot, or in the one a committed move took it to.
 */
static void
fc_add_lock_entry(FcTable *tbl, uint64 slotno, void *arg)
{
	uint16		from_tag = 0;	/* 0: the slot noted, no link to check */

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
		held = fc_current_xact_lock(hdr, &mode);
		if (!fc_xmax_live(hdr))
		{
			LWLockRelease(lock);
			if (held)
				fc_append_lock_entry((FcLockEntries *) arg, tbl, slotno, mode);
			return;
		}

		/*
		 * Deleted or moved.  By us: our write holds the row.  By another
		 * transaction: our lock let only a move that kept the key through,
		 * whose outcome decides where the row lives.
		 */
		if (TransactionIdIsCurrentTransactionId(hdr->xmax) ||
			!(hdr->flags & FC_XMAX_UPDATED) || (hdr->flags & FC_XMAX_KEYS_UPDATED) ||
			!ItemPointerIsValid(&hdr->next_tid) ||
			ItemPointerIndicatesMovedPartitions(&hdr->next_tid))
		{
			LWLockRelease(lock);
			return;
		}
		if (fc_xmax_running(hdr))
		{
			TransactionId mover = hdr->xmax;

			LWLockRelease(lock);
			XactLockTableWait(mover, NULL, NULL, XLTW_None);
			continue;
		}
		next = hdr->next_tid;
		from_tag = fc_move_tag(slotno);
		LWLockRelease(lock);
		if (!fc_tid_in_range(tbl, &next, &slotno))
			return;
	}
}

/* PREPARE TRANSACTION: an entry per row the transaction holds locked. */
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
 * Startup recovery, after the transaction's rows are back: its locks, in
 * a transaction that called MultiXactIdSetOldestMember (a lock joining
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
		RelFileNode rnode;
		FcTable    *tbl;

		if (s->op != FC_PREP_LOCK)
			continue;
		rnode.dbNode = hdr->dbid;
		rnode.spcNode = s->spcid;
		rnode.relNode = s->relnode;
		tbl = fc_table_lookup(&rnode);
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
