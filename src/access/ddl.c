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

/* Copy every row, with its version metadata, to a new storage. */
static void
fc_copy_rows(FcTable *src, FcTable *dst, Oid relid)
{
	uint64		nslots = fc_table_nslots(src);

	for (uint64 s = 0; s < nslots; s++)
	{
		char	   *sp = fc_slot_ptr(src, s);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		uint64		d;
		char	   *dp;
		FcSlotHeader *dhdr;

		if (!(hdr->flags & FC_SLOT_USED))
			continue;
		d = fc_slot_alloc(dst, relid);
		dp = fc_slot_ptr(dst, d);
		dhdr = (FcSlotHeader *) dp;
		memcpy(dhdr, hdr, sizeof(FcSlotHeader));
		dhdr->undo = NULL;
		dhdr->link = 0;
		memcpy(fc_pp_live(dp, &dst->layout), fc_pp_live(sp, &src->layout), hdr->live_len);
		if (d != s)
			ItemPointerSetInvalid(&dhdr->next_tid);
	}
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
	fc_copy_rows(src, dst, RelationGetRelid(rel));
	fc_pending_drop_add(&rel->rd_node, true);
}

/*
 * VACUUM FULL and CLUSTER: copy the rows everyone can still see into the
 * new storage, freezing creators older than the cutoff.  As with ALTER
 * TABLE rewrites (and unlike heap's CLUSTER), old versions are not carried
 * over; the table is held with AccessExclusiveLock throughout.
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
	FcTable    *src = fc_table_for_rel(OldTable);
	FcTable    *dst = fc_table_for_rel(NewTable);
	uint64		nslots = fc_table_nslots(src);
	TupleDesc	newdesc = RelationGetDescr(NewTable);
	TupleTableSlot *oldslot = table_slot_create(OldTable, NULL);
	TupleTableSlot *newslot = MakeSingleTupleTableSlot(newdesc, &TTSOpsVirtual);
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "fastckpt rewrite row",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt;

	*num_tuples = *tups_vacuumed = *tups_recently_dead = 0;
	for (uint64 s = 0; s < nslots; s++)
	{
		char	   *sp = fc_slot_ptr(src, s);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		FcVisible	v;
		HeapTuple	tuple;
		uint64		d;
		FcSlotHeader *dhdr;
		uint16		v_flags = 0;

		if (!(hdr->flags & FC_SLOT_USED))
			continue;
		if ((hdr->flags & FC_SLOT_DEAD) ||
			(hdr->undo == NULL && fc_xmin_aborted(hdr->xmin, &hdr->flags)))
		{
			*tups_vacuumed += 1;
			continue;
		}
		if (fc_xmax_committed(hdr))
		{
			if (TransactionIdPrecedes(hdr->xmax, OldestXmin))
				*tups_vacuumed += 1;
			else
				*tups_recently_dead += 1;
			continue;
		}
		if (!fc_visible_version(hdr, fc_pp_live(sp, &src->layout), SnapshotAny, &v))
		{
			*tups_vacuumed += 1;
			continue;
		}

		/*
		 * Re-form the row through the new descriptor, as heap's rewrite
		 * does: values of columns added without a rewrite get materialized
		 * (the new table has no "missing" defaults), dropped columns become
		 * NULL, and the new slot size applies.
		 */
		oldcxt = MemoryContextSwitchTo(rowcxt);
		fc_store_version(oldslot, OldTable, s, &v);
		slot_getallattrs(oldslot);
		ExecClearTuple(newslot);
		for (int i = 0; i < newdesc->natts; i++)
		{
			bool		dropped = TupleDescAttr(newdesc, i)->attisdropped;

			newslot->tts_isnull[i] = dropped || oldslot->tts_isnull[i];
			newslot->tts_values[i] = newslot->tts_isnull[i] ? (Datum) 0 :
				oldslot->tts_values[i];
		}
		ExecStoreVirtualTuple(newslot);
		tuple = fc_form_image(NewTable, dst, newslot);
		d = fc_insert_row(NewTable, dst, tuple, v.xmin, v.cmin, 0, 0);
		MemoryContextSwitchTo(oldcxt);
		ExecClearTuple(newslot);
		MemoryContextReset(rowcxt);
		dhdr = fc_slot_header(dst, d);
		if (fc_xmin_committed(v.xmin, &v_flags))
			dhdr->flags |= TransactionIdPrecedes(v.xmin, *xid_cutoff) ?
				FC_XMIN_FROZEN : FC_XMIN_COMMITTED;
		*num_tuples += 1;
	}
	ExecDropSingleTupleTableSlot(oldslot);
	ExecDropSingleTupleTableSlot(newslot);
	MemoryContextDelete(rowcxt);
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

/* The store knows its row count; no sampling or density guesses needed. */
void
fc_relation_estimate_size(Relation rel, int32 *attr_widths, BlockNumber *pages,
						  double *tuples, double *allvisfrac)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	uint64		used;

	SpinLockAcquire(&tbl->alloc_lock);
	used = fc_table_nslots(tbl) - tbl->nfree_slots;
	SpinLockRelease(&tbl->alloc_lock);
	*pages = fc_table_nblocks(tbl);
	*tuples = (double) used;
	*allvisfrac = 0;
}
