/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  Storage lifecycle: CREATE, TRUNCATE, rewrites, SET TABLESPACE,
 *	  VACUUM FULL/CLUSTER; size estimates.
 *
 * Each relfilenode gets its own table storage, created here and freed by
 * the transaction's end (pending_drop.c), so TRUNCATE and rewrites are
 * transactional exactly like heap's file swaps.  An empty main fork (and,
 * for unlogged tables, an init fork) is still created so PostgreSQL's file
 * handling of the relation stays as for any table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "miscadmin.h"
#include "access/multixact.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "store/row_size.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/write_set.h"

static void
fc_create_files(const RelFileNode *rnode, char persistence)
{
	SMgrRelation srel = RelationCreateStorage(*rnode, persistence, true);

	if (persistence == RELPERSISTENCE_UNLOGGED)
	{
		smgrcreate(srel, INIT_FORKNUM, false);
		log_smgrcreate(rnode, INIT_FORKNUM);
		smgrimmedsync(srel, INIT_FORKNUM);
	}
	smgrclose(srel);
}

void
fc_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
							 char persistence, TransactionId *freezeXid,
							 MultiXactId *minmulti)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the fastckpt access method supports only tables"),
				 errdetail("\"%s\" is not an ordinary table.", RelationGetRelationName(rel))));
	if (persistence == RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("fastckpt table \"%s\" must be unlogged", RelationGetRelationName(rel)),
				 errdetail("fastckpt tables are made durable by pg_fastckpt, not by PostgreSQL's WAL."),
				 errhint("CREATE TABLE ... USING fastckpt makes the table unlogged by itself; "
						 "where that did not happen, use CREATE UNLOGGED TABLE.")));

	*freezeXid = RecentXmin;
	*minmulti = GetOldestMultiXactId();
	fc_create_files(newrnode, persistence);

	fc_table_create(newrnode, RelationGetRelid(rel), fc_row_image_capacity(rel, NULL));
	fc_pending_drop_add(newrnode, false);

	/* TRUNCATE: the previous storage goes when the transaction commits */
	if (!RelFileNodeEquals(*newrnode, rel->rd_node) &&
		fc_table_lookup(&rel->rd_node) != NULL)
		fc_pending_drop_add(&rel->rd_node, true);
}

/* TRUNCATE of a table created (or given new storage) in this transaction. */
void
fc_relation_nontransactional_truncate(Relation rel)
{
	FcTable    *tbl = fc_table_lookup(&rel->rd_node);

	if (tbl != NULL)
		fc_table_reset(tbl);
}

/*
 * Copy a storage slot for slot, keeping every slot number (the indexes are
 * kept as they are), whole slots (but not the shadow image marks) and the
 * old versions older snapshots may still need.  The table is held with
 * AccessExclusiveLock.
 */
static void
fc_copy_storage(FcTable *src, FcTable *dst, Oid relid)
{
	uint64		nslots = fc_table_nslots(src);
	uint64		nfree = 0;
	uint64	   *unused = palloc(sizeof(uint64) * Max(nslots, 1));

	Assert(src->layout.stride == dst->layout.stride);
	for (uint64 s = 0; s < nslots; s++)
	{
		FcSlotHeader *hdr = fc_slot_header(src, s);
		uint64		d = fc_slot_alloc(dst, relid);
		FcSlotHeader *dhdr = fc_slot_header(dst, d);
		FcUndo	  **chain;
		int			depth = 0;

		Assert(d == s);
		if (!(hdr->flags & FC_SLOT_USED))
		{
			unused[nfree++] = d;
			continue;
		}
		memcpy(dhdr, hdr, src->layout.stride);
		dhdr->undo = NULL;
		dhdr->link = 0;
		/* a new storage: its commit installs every row afresh */
		fc_pp_reset(&dhdr->marks);

		/* old versions, queued oldest first as the FIFO expects */
		for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
			depth++;
		chain = palloc(sizeof(FcUndo *) * Max(depth, 1));
		depth = 0;
		for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
			chain[depth++] = u;
		/* oldest first, so pushes rebuild the chain in order */
		for (int i = depth - 1; i >= 0; i--)
		{
			FcUndo	   *copy = fc_undo_alloc(dst, relid);

			memcpy(copy, chain[i], FC_UNDO_HEADER_SIZE + chain[i]->len);
			fc_undo_push(dhdr, copy);
			fc_undo_enqueue(dst, copy);
		}
		pfree(chain);
	}
	for (uint64 i = 0; i < nfree; i++)
		fc_slot_free(dst, unused[i]);
	pg_atomic_write_u64(&dst->live_rows, pg_atomic_read_u64(&src->live_rows));
	pfree(unused);
}

/* ALTER TABLE ... SET TABLESPACE */
void
fc_relation_copy_data(Relation rel, const RelFileNode *newrnode)
{
	FcTable    *src = fc_table_for_rel(rel);
	FcTable    *dst;

	fc_create_files(newrnode, rel->rd_rel->relpersistence);
	dst = fc_table_create(newrnode, RelationGetRelid(rel), src->layout.image_capacity);
	fc_pending_drop_add(newrnode, false);
	fc_copy_storage(src, dst, RelationGetRelid(rel));
	fc_pending_drop_add(&rel->rd_node, true);
	/* as heap's copy_data does: the old files go at commit */
	RelationDropStorage(rel);
}

typedef struct FcClusterState
{
	Relation	old_rel;
	Relation	new_rel;
	FcTable    *src;
	FcTable    *dst;
	TupleDesc	newdesc;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	MemoryContext rowcxt;
	TransactionId oldest_xmin;
	TransactionId xid_cutoff;
	double		num_tuples;
	double		tups_vacuumed;
	double		tups_recently_dead;
} FcClusterState;

static void
fc_cluster_copy_slot(FcClusterState *st, uint64 s)
{
	char	   *sp = fc_slot_ptr(st->src, s);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;
	FcVisible	v;
	HeapTuple	tuple;
	uint64		d;
	FcSlotHeader *dhdr;
	uint16		v_flags = 0;
	MemoryContext oldcxt;

	if (!(hdr->flags & FC_SLOT_USED))
		return;
	if ((hdr->flags & FC_SLOT_DEAD) ||
		(hdr->undo == NULL && fc_xmin_aborted(hdr->xmin, &hdr->flags)))
	{
		st->tups_vacuumed += 1;
		return;
	}
	if (fc_xmax_committed(hdr))
	{
		if (TransactionIdPrecedes(hdr->xmax, st->oldest_xmin))
			st->tups_vacuumed += 1;
		else
			st->tups_recently_dead += 1;
		return;
	}
	if (!fc_latest_version(hdr, fc_pp_live(sp, &st->src->layout), &v))
	{
		st->tups_vacuumed += 1;
		return;
	}

	/*
	 * Re-form the row through the new descriptor, as heap's rewrite does:
	 * values of columns added without a rewrite get materialized (the new
	 * table has no "missing" defaults), dropped columns become NULL, and
	 * the new slot size applies.
	 */
	oldcxt = MemoryContextSwitchTo(st->rowcxt);
	fc_store_version(st->oldslot, st->old_rel, s, &v);
	slot_getallattrs(st->oldslot);
	ExecClearTuple(st->newslot);
	for (int i = 0; i < st->newdesc->natts; i++)
	{
		bool		dropped = TupleDescAttr(st->newdesc, i)->attisdropped;

		st->newslot->tts_isnull[i] = dropped || st->oldslot->tts_isnull[i];
		st->newslot->tts_values[i] = st->newslot->tts_isnull[i] ? (Datum) 0 :
			st->oldslot->tts_values[i];
	}
	ExecStoreVirtualTuple(st->newslot);
	tuple = fc_form_image(st->new_rel, st->dst, st->newslot);
	d = fc_insert_row(st->new_rel, st->dst, tuple, v.xmin, v.cmin, 0, 0);
	MemoryContextSwitchTo(oldcxt);
	ExecClearTuple(st->newslot);
	MemoryContextReset(st->rowcxt);

	dhdr = fc_slot_header(st->dst, d);
	if (fc_xmin_committed(v.xmin, &v_flags))
		dhdr->flags |= TransactionIdPrecedes(v.xmin, st->xid_cutoff) ?
			FC_XMIN_FROZEN : FC_XMIN_COMMITTED;
	st->num_tuples += 1;
}

/*
 * VACUUM FULL and CLUSTER: copy the rows everyone can still see into the
 * new storage -- in the index's order for CLUSTER, so that scans return
 * them in that order -- freezing creators older than the cutoff.  As with
 * ALTER TABLE rewrites (and unlike heap's CLUSTER), old versions are not
 * carried over; the table is held with AccessExclusiveLock throughout.
 */
void
fc_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
							 Relation OldIndex, bool use_sort,
							 TransactionId OldestXmin,
							 TransactionId *xid_cutoff,
							 MultiXactId *multi_cutoff,
							 double *num_tuples, double *tups_vacuumed,
							 double *tups_recently_dead)
{
	FcClusterState st;
	uint64		nslots;
	bool	   *done = NULL;

	memset(&st, 0, sizeof(st));
	st.old_rel = OldTable;
	st.new_rel = NewTable;
	st.src = fc_table_for_rel(OldTable);
	st.dst = fc_table_for_rel(NewTable);
	st.newdesc = RelationGetDescr(NewTable);
	st.oldslot = table_slot_create(OldTable, NULL);
	st.newslot = MakeSingleTupleTableSlot(st.newdesc, &TTSOpsVirtual);
	st.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "fastckpt rewrite row",
									  ALLOCSET_DEFAULT_SIZES);
	st.oldest_xmin = OldestXmin;
	st.xid_cutoff = *xid_cutoff;
	nslots = fc_table_nslots(st.src);

	if (OldIndex != NULL)
	{
		IndexScanDesc iscan = index_beginscan(OldTable, OldIndex, SnapshotAny, 0, 0);
		ItemPointer tid;
		uint64		s;

		done = palloc_extended(Max(nslots, 1) * sizeof(bool), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		index_rescan(iscan, NULL, 0, NULL, 0);
		while ((tid = index_getnext_tid(iscan, ForwardScanDirection)) != NULL)
		{
			CHECK_FOR_INTERRUPTS();
			if (!fc_tid_in_range(st.src, tid, &s) || done[s])
				continue;
			done[s] = true;
			fc_cluster_copy_slot(&st, s);
		}
		index_endscan(iscan);
	}
	for (uint64 s = 0; s < nslots; s++)
	{
		if ((s & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		if (done == NULL || !done[s])
			fc_cluster_copy_slot(&st, s);
	}

	*num_tuples = st.num_tuples;
	*tups_vacuumed = st.tups_vacuumed;
	*tups_recently_dead = st.tups_recently_dead;
	if (done)
		pfree(done);
	ExecDropSingleTupleTableSlot(st.oldslot);
	ExecDropSingleTupleTableSlot(st.newslot);
	MemoryContextDelete(st.rowcxt);
}

uint64
fc_relation_size(Relation rel, ForkNumber forkNumber)
{
	FcTable    *tbl;

	if (forkNumber != MAIN_FORKNUM && forkNumber != InvalidForkNumber)
		return 0;
	tbl = fc_table_for_rel(rel);
	return (uint64) fc_table_nblocks(tbl) * BLCKSZ;
}

bool
fc_relation_needs_toast_table(Relation rel)
{
	return false;
}

/*
 * The store counts committed live rows (commit install keeps the count), so
 * the planner needs no sampling or density guesses.
 *
 * Pages, for the planner, are the memory a sequential scan walks, in
 * BLCKSZ units: what seq_page_cost is charged per.  (The virtual blocks of
 * TIDs hold 256 slots each whatever their size, and would make a scan of
 * a few hundred wide rows look cheaper than one index probe: the planner
 * then scans all of a hot 100-row table to update one row.)
 */
void
fc_relation_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
						  double *tuples, double *allvisfrac)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	int64		live = (int64) pg_atomic_read_u64(&tbl->live_rows);
	double		bytes = (double) fc_table_nslots(tbl) * tbl->layout.stride;

	*pages = (BlockNumber) Min(ceil(bytes / BLCKSZ), (double) MaxBlockNumber);
	*tuples = (double) Max(live, 0);
	*allvisfrac = 0;
}
