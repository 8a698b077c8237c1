/*-------------------------------------------------------------------------
 *
 * sequence_flush.c
 *	  Make the sequence values a committing transaction stored durable.
 *
 * nextval() WAL-logs a sequence 32 values ahead and hands out the values
 * in between without logging again.  The record that covers a value may
 * come from another transaction that rolled back (a failed INSERT), which
 * flushes nothing.  A heap commit flushes its own commit record, and with
 * it every earlier record; a fastckpt commit that wrote no WAL flushes
 * none, so a crash could take the sequence back below values that
 * recovered rows hold, and the next inserts would collide with them.
 * Before such a commit is acknowledged, WAL is flushed up to the last
 * record of each sequence a table it wrote, or a partitioned table above
 * it, owns (serial and identity columns) or names in a column default
 * (DEFAULT nextval('seq')).
 * Usually that record is on disk already and this costs no I/O.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/partition.h"
#include "nodes/nodeFuncs.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "storage/bufmgr.h"
#include "utils/hsearch.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "txn/write_set.h"

#define FC_MAX_OWNED_SEQUENCES	8

/*
 * A table's sequences (owned, or in a column default), cached until a
 * relcache invalidation.
 */
typedef struct FcTableSequences
{
	Oid			relid;			/* hash key */
	int			nseqs;			/* -1: more than FC_MAX_OWNED_SEQUENCES */
	Oid			seqs[FC_MAX_OWNED_SEQUENCES];
} FcTableSequences;

/*
 * Emptied by any relcache invalidation: ALTER SEQUENCE ... OWNED BY
 * invalidates the sequence, not the table that comes to own it.
 */
static HTAB *fc_table_seqs = NULL;

/* Collect the sequences of nextval('seq') calls in an expression. */
static bool
fc_nextval_walker(Node *node, List **seqs)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && ((FuncExpr *) node)->funcid == F_NEXTVAL)
	{
		Const	   *arg = (Const *) linitial(((FuncExpr *) node)->args);

		if (IsA(arg, Const) && !arg->constisnull)
			*seqs = list_append_unique_oid(*seqs, DatumGetObjectId(arg->constvalue));
	}
	return expression_tree_walker(node, fc_nextval_walker, (void *) seqs);
}

/* Add a table's owned sequences and those its column defaults call nextval of. */
static void
fc_add_table_sequences(Oid relid, List **seqs)
{
	Relation	rel;
	TupleConstr *constr;

	*seqs = list_concat_unique_oid(*seqs, getOwnedSequences(relid));
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return;
	constr = RelationGetDescr(rel)->constr;
	for (int i = 0; constr != NULL && i < constr->num_defval; i++)
		(void) fc_nextval_walker(stringToNode(constr->defval[i].adbin), seqs);
	relation_close(rel, AccessShareLock);
}

/*
 * The sequences whose values rows of the table may hold: its own, and
 * those of the partitioned tables above it, whose defaults and identity
 * columns an INSERT through them uses.
 */
static List *
fc_table_sequences(Oid relid)
{
	List	   *seqs = NIL;

	fc_add_table_sequences(relid, &seqs);
	if (get_rel_relispartition(relid))
	{
		List	   *ancestors = get_partition_ancestors(relid);
		ListCell   *lc;

		foreach(lc, ancestors)
			fc_add_table_sequences(lfirst_oid(lc), &seqs);
		list_free(ancestors);
	}
	return seqs;
}

static FcTableSequences *
fc_cached_table_sequences(Oid relid)
{
	FcTableSequences *entry;
	List	   *seqs;
	bool		found;

	if (fc_table_seqs == NULL)
		fc_table_seqs = fc_relid_cache_create("fastckpt table sequences",
										 sizeof(FcTableSequences));
	entry = hash_search(fc_table_seqs, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry;

	/* the look-up may take invalidations: enter the result after it */
	seqs = fc_table_sequences(relid);
	entry = hash_search(fc_table_seqs, &relid, HASH_ENTER, &found);
	entry->nseqs = list_length(seqs) <= FC_MAX_OWNED_SEQUENCES ? list_length(seqs) : -1;
	for (int i = 0; i < entry->nseqs; i++)
		entry->seqs[i] = list_nth_oid(seqs, i);
	list_free(seqs);
	return entry;
}

/* Where the sequence's last WAL record ends (its page LSN), or 0. */
static XLogRecPtr
fc_sequence_lsn(Oid seqid)
{
	Relation	seqrel = try_relation_open(seqid, AccessShareLock);
	Buffer		buf;
	XLogRecPtr	lsn;

	if (seqrel == NULL)
		return InvalidXLogRecPtr;
	buf = ReadBuffer(seqrel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = BufferGetLSNAtomic(buf);
	UnlockReleaseBuffer(buf);
	relation_close(seqrel, NoLock);
	return lsn;
}

void
fc_flush_table_sequences(void)
{
	int			nwrites = fc_write_set_size();
	FcTable    *last = NULL;
	XLogRecPtr	upto = InvalidXLogRecPtr;

	/* a table met again later is looked up again: a cache hit, no harm */
	for (int i = 0; i < nwrites; i++)
	{
		FcWrite    *w = fc_write_set_get(i);
		FcTableSequences seqs;

		if (w->tbl == last || !fc_write_is_logged(w) || w->op == FC_OP_DELETE)
			continue;
		last = w->tbl;
		/* a copy: opening a sequence may take invalidations that empty the cache */
		seqs = *fc_cached_table_sequences(w->tbl->relid);
		if (seqs.nseqs < 0)
		{
			/* too many to look at: flush whatever WAL there is */
			upto = GetXLogInsertRecPtr();
			break;
		}
		for (int j = 0; j < seqs.nseqs; j++)
			upto = Max(upto, fc_sequence_lsn(seqs.seqs[j]));
	}
	if (upto != InvalidXLogRecPtr)
		XLogFlush(upto);
}
