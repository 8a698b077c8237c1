/*-------------------------------------------------------------------------
 *
 * sequence_flush.c
 *	  Make the sequence values a committing transaction may have stored
 *	  durable.
 *
 * nextval() WAL-logs a sequence 32 values ahead and hands out the values
 * in between without logging again.  The record that covers a value may
 * come from a transaction that rolled back, is still running, or committed
 * asynchronously, none of which flushed it.  A heap commit flushes its own
 * commit record, and with it every earlier record; a fastckpt commit that
 * wrote no WAL flushes none, so a crash could take the sequence back below
 * values that recovered rows hold, and the next inserts would collide with
 * them.  Before such a commit is acknowledged, WAL is flushed up to the
 * last record of each sequence the transaction took a value of, and of
 * each one an earlier transaction of the session took a value of without
 * making it durable (a value fetched first, then inserted).
 *
 * Every way of taking a value (nextval() in a statement, a PL/pgSQL
 * expression or a column default, an identity column, currval(), setval())
 * locks the sequence RowExclusiveLock under the top transaction's resource
 * owner, so this backend's locks name those sequences.
 * Usually their records are on disk already and the flush costs no I/O.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "txn/write_set.h"

/*
 * The fast-path lock bits of a PGPROC: three per slot, one per weak lock
 * mode from AccessShareLock on (lock.c's FAST_PATH_* layout, private to it).
 */
#define FC_FP_BITS_PER_SLOT		3
#define FC_FP_ROW_EXCLUSIVE(bits, slot) \
	(((bits) >> (FC_FP_BITS_PER_SLOT * (slot) + (RowExclusiveLock - 1))) & 1)

/*
 * WAL up to here holds sequence records whose values an earlier
 * transaction of this session took and may not have made durable.
 */
static XLogRecPtr fc_session_sequence_lsn = InvalidXLogRecPtr;

/*
 * Relations a transaction of this session that rolled back held
 * RowExclusiveLock on (in TopMemoryContext): which are sequences is asked
 * at the next fastckpt commit, since an aborting transaction cannot read
 * the catalogs.  Its nextval() values may be stored after (a retry).
 */
static List *fc_aborted_relations = NIL;

/*
 * Past this many, the next fastckpt commit flushes all the WAL written
 * before the rollback instead: a session that keeps rolling back
 * transactions on many relations (temporary tables made and dropped)
 * would otherwise grow the list, and each commit's look at it, unbounded.
 */
#define FC_ABORTED_RELATIONS_MAX	64

/*
 * Relations of this database this backend holds RowExclusiveLock on: the
 * fast-path slots, then the main lock table.  Only relation ids are
 * gathered here (under LWLocks); which of them are sequences is asked
 * after.  A strong locker may move fast-path locks to the main table
 * meanwhile, under the partition lock: a lock met in neither place was in
 * the fast path when that was read.
 */
static List *
fc_row_exclusive_relations(void)
{
	List	   *relids = NIL;
	uint64		bits;

	LWLockAcquire(&MyProc->fpInfoLock, LW_SHARED);
	bits = MyProc->fpLockBits;
	for (int i = 0; i < FP_LOCK_SLOTS_PER_BACKEND; i++)
		if (FC_FP_ROW_EXCLUSIVE(bits, i))
			relids = lappend_oid(relids, MyProc->fpRelId[i]);
	LWLockRelease(&MyProc->fpInfoLock);

	for (int p = 0; p < NUM_LOCK_PARTITIONS; p++)
	{
		SHM_QUEUE  *head = &MyProc->myProcLocks[p];
		PROCLOCK   *proclock;

		/* only this backend and a fast-path transfer add to its lists */
		if (SHMQueueEmpty(head))
			continue;
		LWLockAcquire(LockHashPartitionLockByIndex(p), LW_SHARED);
		proclock = (PROCLOCK *) SHMQueueNext(head, head, offsetof(PROCLOCK, procLink));
		while (proclock != NULL)
		{
			LOCKTAG    *tag = &proclock->tag.myLock->tag;

			if (tag->locktag_type == LOCKTAG_RELATION &&
				tag->locktag_field1 == MyDatabaseId &&
				(proclock->holdMask & LOCKBIT_ON(RowExclusiveLock)) != 0)
				relids = lappend_oid(relids, tag->locktag_field2);
			proclock = (PROCLOCK *) SHMQueueNext(head, &proclock->procLink,
												 offsetof(PROCLOCK, procLink));
		}
		LWLockRelease(LockHashPartitionLockByIndex(p));
	}
	return relids;
}

/*
 * Where the sequence's last WAL record ends (its page LSN), or 0.  Unless
 * the caller holds a lock on it, lock it against a concurrent DROP.
 */
static XLogRecPtr
fc_sequence_lsn(Oid seqid, LOCKMODE lockmode)
{
	Relation	seqrel = try_relation_open(seqid, lockmode);
	Buffer		buf;
	XLogRecPtr	lsn;

	if (seqrel == NULL)
		return InvalidXLogRecPtr;
	buf = ReadBuffer(seqrel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = BufferGetLSNAtomic(buf);
	UnlockReleaseBuffer(buf);
	relation_close(seqrel, lockmode);
	return lsn;
}

/* The end of the last WAL record of the sequences this transaction used. */
static XLogRecPtr
fc_used_sequences_lsn(void)
{
	List	   *relids;
	ListCell   *lc;
	XLogRecPtr	upto = InvalidXLogRecPtr;

	/* a process without a database has no sequences (nor pg_class to ask) */
	if (!OidIsValid(MyDatabaseId))
		return InvalidXLogRecPtr;
	relids = fc_row_exclusive_relations();
	/* the lock keeps each one from being dropped meanwhile */
	foreach(lc, relids)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_SEQUENCE)
			upto = Max(upto, fc_sequence_lsn(lfirst_oid(lc), NoLock));
	list_free(relids);
	/* those of transactions that rolled back: their locks are gone */
	foreach(lc, fc_aborted_relations)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_SEQUENCE)
			upto = Max(upto, fc_sequence_lsn(lfirst_oid(lc), AccessShareLock));
	return upto;
}

/* A commit that flushed WAL or sequences: nothing earlier is owed. */
static void
fc_sequences_flushed(void)
{
	fc_session_sequence_lsn = InvalidXLogRecPtr;
	list_free(fc_aborted_relations);
	fc_aborted_relations = NIL;
}

/*
 * A transaction with an xid aborts: nextval() gives one when it logs a
 * sequence ahead, and its abort record is not flushed.  Keep the relations
 * it held RowExclusiveLock on (still held now) for the session's next
 * fastckpt commit to look at.
 */
void
fc_note_aborted_sequences(void)
{
	MemoryContext oldcxt;
	List	   *relids;

	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()) || !OidIsValid(MyDatabaseId))
		return;
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	relids = fc_row_exclusive_relations();
	fc_aborted_relations = list_concat_unique_oid(fc_aborted_relations, relids);
	list_free(relids);
	if (list_length(fc_aborted_relations) > FC_ABORTED_RELATIONS_MAX)
	{
		fc_session_sequence_lsn = Max(fc_session_sequence_lsn, fc_wal_records_end());
		list_free(fc_aborted_relations);
		fc_aborted_relations = NIL;
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * At the commit of a transaction that wrote no fastckpt row: remember the
 * sequence records it relied on if its commit will not flush them (it has
 * no transaction id, or commits asynchronously), for the session's next
 * fastckpt commit, which may store the values.
 */
void
fc_note_session_sequences(void)
{
	if (TransactionIdIsValid(GetTopTransactionIdIfAny()) &&
		synchronous_commit >= SYNCHRONOUS_COMMIT_LOCAL_FLUSH)
	{
		fc_sequences_flushed();	/* its commit record's flush covers them */
		return;
	}
	fc_session_sequence_lsn = Max(fc_session_sequence_lsn, fc_used_sequences_lsn());
}

/*
 * Before a fastckpt commit that wrote no WAL is acknowledged: flush the
 * sequence records the values it may hold depend on.
 */
void
fc_flush_used_sequences(void)
{
	XLogRecPtr	upto = Max(fc_session_sequence_lsn, fc_used_sequences_lsn());

	if (upto != InvalidXLogRecPtr)
		XLogFlush(upto);
	fc_sequences_flushed();
}
