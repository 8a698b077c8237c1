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
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/storage.h"
#include "catalog/storage_xlog.h"
#include "storage/smgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "store/row_size.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/write_set.h"

/* When set, the row image size of the next storage created (utility.c) */
uint32		fc_resize_capacity = 0;

/* an ALTER TABLE is running: its rewrites keep the table's slot size */
bool		fc_alter_table_running = false;

/*
 * The table a rewrite's transient table stands in for, or InvalidOid.
 * PostgreSQL names it "pg_temp_<OID of the table>", in the table's schema
 * (make_new_heap).
 */
Oid
fc_rewritten_table(const char *name, Oid namespace)
{
	char	   *end;
	unsigned long oid;

	if (name == NULL || strncmp(name, "pg_temp_", 8) != 0)
		return InvalidOid;
	errno = 0;
	oid = strtoul(name + 8, &end, 10);
	if (errno != 0 || *end != '\0' || oid == 0 || oid > PG_UINT32_MAX ||
		get_rel_namespace((Oid) oid) != namespace)
		return InvalidOid;
	return (Oid) oid;
}

/* The fastckpt table a rewrite's transient table stands in for, or InvalidOid. */
Oid
fc_rewrite_source(Relation rel)
{
	Oid			source = fc_rewritten_table(RelationGetRelationName(rel),
											RelationGetNamespace(rel));

	return OidIsValid(source) && fc_relid_is_fastckpt(source) ? source : InvalidOid;
}

/*
 * A table's name for messages, or NULL if it has none: a rewrite's
 * transient table goes by the name of the table rewritten (VACUUM FULL,
 * CLUSTER, ALTER TABLE), which is the one the user named.
 */
char *
fc_table_name_for_message(Oid relid)
{
	char	   *name = get_rel_name(relid);
	Oid			source = fc_rewritten_table(name, get_rel_namespace(relid));
	char	   *source_name = OidIsValid(source) ? get_rel_name(source) : NULL;

	return source_name != NULL ? source_name : name;
}

/*
 * Row image bytes for a new storage of rel.  PostgreSQL's own rewrites
 * under ALTER TABLE (a column's type changed, a volatile default added)
 * keep at least the slots of the table they copy, which may have been
 * made under a larger pg_fastckpt.default_row_size or bytes_per_char than
 * this session's; the ALTER then grows them as the new columns need
 * (fc_resize_slots_after_alter).  VACUUM FULL and CLUSTER size the slots
 * afresh, but never below the longest row they copy, and TRUNCATE keeps
 * at least the slots the table had: neither refuses rows the table held.
 * New tables are sized afresh.
 */
static uint32
fc_new_storage_capacity(Relation rel, const RelFileNode *newrnode)
{
	uint32		capacity = fc_row_image_capacity(rel, NULL);
	Oid			source;
	FcTable    *old_tbl;

	if (fc_resize_capacity > 0)
		return fc_resize_capacity;
	if (OidIsValid(source = fc_rewrite_source(rel)))
	{
		Relation	old = table_open(source, NoLock);	/* the rewrite locked it */

		fc_gate_wait(old);		/* its longest row may not be back yet */
		old_tbl = fc_table_for_rel(old);
		if (fc_alter_table_running)
			capacity = Max(Max(capacity, old_tbl->layout.image_capacity),
						   fc_alter_row_target(source, rel));
		else
			capacity = Max(capacity, MAXALIGN(fc_table_max_live_len(old_tbl)));
		table_close(old, NoLock);
	}
	else if (!RelFileNodeEquals(*newrnode, rel->rd_node) &&
			 (old_tbl = fc_table_lookup(&rel->rd_node)) != NULL)
		capacity = Max(capacity, old_tbl->layout.image_capacity);
	return Min(capacity, FC_MAX_IMAGE_CAPACITY);
}

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

	fc_table_create_new(newrnode, rel, fc_new_storage_capacity(rel, newrnode));
	fc_pending_drop_add(newrnode, false, persistence == RELPERSISTENCE_TEMP);

	/* TRUNCATE: the previous storage goes when the transaction commits */
	if (!RelFileNodeEquals(*newrnode, rel->rd_node) &&
		fc_table_lookup(&rel->rd_node) != NULL)
		fc_pending_drop_add(&rel->rd_node, true, persistence == RELPERSISTENCE_TEMP);
}

/* TRUNCATE of a table created (or given new storage) in this transaction. */
void
fc_relation_nontransactional_truncate(Relation rel)
{
	FcTable    *tbl = fc_table_lookup(&rel->rd_node);

	if (tbl != NULL)
		fc_table_truncate(tbl);
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
		if (s % 4096 == 0)
			CHECK_FOR_INTERRUPTS();
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
	FcTable    *src;
	FcTable    *dst;
	bool		is_temp = rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP;

	fc_gate_wait(rel);			/* all of its rows, not what recovery has so far */
	src = fc_table_for_rel(rel);
	fc_create_files(newrnode, rel->rd_rel->relpersistence);
	dst = fc_table_create_new(newrnode, rel, src->layout.image_capacity);
	fc_pending_drop_add(newrnode, false, is_temp);
	fc_copy_storage(src, dst, RelationGetRelid(rel));
	fc_pending_drop_add(&rel->rd_node, true, is_temp);
	/* as heap's copy_data does: the old files go at commit */
	RelationDropStorage(rel);
}

/*
 * A storage for a table that has none: its rows did not come back at
 * startup (pg_fastckpt/ was moved aside, or recovery dropped the storage),
 * so it starts empty.  The new storage is logged before anyone can write
 * to it: replay gives rows only to storages that a checkpoint or a DDL
 * record holds, and without that record, commits to the table between now
 * and the next checkpoint would be lost in a crash.  Record first, then
 * the directory entry, both under the install latch: whoever finds the
 * storage commits after the record with a larger CSN.  One process at a
 * time, so that a storage is logged once.
 */
FcTable *
fc_storage_adopt(Relation rel)
{
	const RelFileNode *rnode = &rel->rd_node;
	Oid			relid = RelationGetRelid(rel);
	uint32		capacity = fc_row_image_capacity(rel, NULL);
	FcTable    *tbl;
	struct
	{
		fc_log_header hdr;
		fc_log_ddl	ddl;
	}			rec;

	/*
	 * Not before recovery has loaded what there is (VACUUM, ANALYZE and
	 * DDL get here before their own gate waits).  Recovery processes get
	 * here with the log open, or while replaying it, whose records then
	 * create what it holds.
	 */
	fc_gate_wait(rel);
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		return fc_table_adopt(rnode, relid, capacity, true, 0);	/* not logged */
	if (!fc_log_is_ready())
		return fc_table_adopt(rnode, relid, capacity, false, 1);

	LWLockAcquire(fc_misc_lock(FC_LOCK_ADOPT), LW_EXCLUSIVE);
	tbl = fc_table_lookup(rnode);
	if (tbl == NULL)
	{
		StaticAssertStmt(sizeof(rec) == FC_LOG_HEADER_SIZE + sizeof(fc_log_ddl),
						 "a DDL entry follows the record header");
		memset(&rec, 0, sizeof(rec));
		rec.hdr.len = sizeof(rec);
		rec.hdr.dbid = rnode->dbNode;
		rec.hdr.kind = FC_REC_DDL;
		rec.hdr.nentries = 1;
		rec.ddl.op = FC_DDL_CREATE;
		rec.ddl.dbid = rnode->dbNode;
		rec.ddl.spcid = rnode->spcNode;
		rec.ddl.relnode = rnode->relNode;
		rec.ddl.relid = relid;
		rec.ddl.image_capacity = capacity;

		LWLockAcquire(fc_misc_lock(FC_LOCK_INSTALL), LW_SHARED);
		rec.hdr.csn = fc_log_next_csn();
		(void) fc_log_insert(&rec, sizeof(rec));
		tbl = fc_table_adopt(rnode, relid, capacity, false, rec.hdr.csn);
		LWLockRelease(fc_misc_lock(FC_LOCK_INSTALL));

		/*
		 * Said by the one process that creates it: startup recovery's
		 * workers of a database all list its tables, in any order.
		 */
		if (fc_in_recovery_worker)
			ereport(WARNING,
					(errmsg("pg_fastckpt: table \"%s\" has no rows in the fastckpt log; it opens empty",
							RelationGetRelationName(rel)),
					 errdetail("Its storage was never logged: the log was removed, or the table came from a template database.")));
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_ADOPT));
	return tbl;
}

typedef struct FcDbStorages
{
	Oid			dbid;
	Oid			spcid;			/* InvalidOid: any */
	List	   *rnodes;			/* of RelFileNode */
	int			used;			/* storages that ever had a slot */
} FcDbStorages;

static void
fc_collect_db_storage(FcTable *tbl, void *arg)
{
	FcDbStorages *c = (FcDbStorages *) arg;
	RelFileNode *rnode;

	/* a temporary table's ended with its session (nobody is connected) */
	if (tbl->key.dbid != c->dbid || tbl->is_temp ||
		(OidIsValid(c->spcid) && tbl->key.spcid != c->spcid))
		return;
	if (fc_table_nslots(tbl) > 0)
		c->used++;
	rnode = palloc(sizeof(RelFileNode));
	rnode->spcNode = tbl->key.spcid;
	rnode->dbNode = tbl->key.dbid;
	rnode->relNode = tbl->key.relnode;
	c->rnodes = lappend(c->rnodes, rnode);
}

/* The storages of database dbid (in tablespace spcid, if valid). */
static List *
fc_db_storages(Oid dbid, Oid spcid, int *used)
{
	FcDbStorages c = {dbid, spcid, NIL, 0};

	fc_table_foreach(fc_collect_db_storage, &c);
	if (used)
		*used = c.used;
	return c.rnodes;
}

/*
 * How many storages of database dbid in tablespace spcid have ever had a
 * row: their indexes may point at slots, which a new, empty storage of the
 * same table would hand out again to other rows.
 */
int
fc_storage_count_used(Oid dbid, Oid spcid)
{
	int			used;

	list_free_deep(fc_db_storages(dbid, spcid, &used));
	return used;
}

/*
 * The storages of database dbid in tablespace spcid go when the
 * transaction commits (ALTER DATABASE ... SET TABLESPACE, once it is known
 * that they are empty).
 */
void
fc_storage_drop_database_in(Oid dbid, Oid spcid)
{
	List	   *rnodes = fc_db_storages(dbid, spcid, NULL);
	ListCell   *lc;

	foreach(lc, rnodes)
		fc_pending_drop_add((RelFileNode *) lfirst(lc), true, false);
	list_free_deep(rnodes);
}

/*
 * CREATE DATABASE: the new database's fastckpt tables get the template's
 * rows, slot for slot, since PostgreSQL copied their index files, which
 * point at those slots.  A relation in the template's default tablespace
 * lands in the new database's default tablespace, as PostgreSQL copies it.
 * The copies are storages of this transaction: its commit logs them whole,
 * and replay keeps them only if PostgreSQL's commit log says the database
 * was created.  The template has no other session (PostgreSQL checked, and
 * holds it locked), so its rows do not change under the copy.
 */
void
fc_storage_copy_database(Oid src_db, Oid src_spc, Oid dst_db, Oid dst_spc)
{
	List	   *rnodes = fc_db_storages(src_db, InvalidOid, NULL);
	ListCell   *lc;

	foreach(lc, rnodes)
	{
		RelFileNode *from = (RelFileNode *) lfirst(lc);
		RelFileNode to;
		FcTable    *src;
		FcTable    *dst;

		to.spcNode = (from->spcNode == src_spc) ? dst_spc : from->spcNode;
		to.dbNode = dst_db;
		to.relNode = from->relNode;
		src = fc_table_lookup(from);
		if (src == NULL)
			continue;
		if (fc_table_lookup(&to) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot copy the fastckpt rows of the template: two of its storages would land in relfilenode %u of tablespace %u",
							to.relNode, to.spcNode),
					 errdetail("The template keeps a storage from before a move to another tablespace."),
					 errhint("Restart the server, which drops storages no table has, and create the database again.")));
		dst = fc_table_create(&to, src->relid, src->layout.image_capacity, false);
		fc_pending_drop_add(&to, false, false);
		fc_copy_storage(src, dst, src->relid);
	}
	list_free_deep(rnodes);
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

	/*
	 * Deleted (or moved away) by this transaction, CLUSTER being a later
	 * command of it: heap copies such a row with its deleter, but the new
	 * storage keeps no deleter, so the row would come back live.
	 */
	if (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
		TransactionIdIsCurrentTransactionId(hdr->xmax))
	{
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
	d = fc_insert_row(st->new_rel, st->dst, tuple, v.xmin, v.cmin, 0, 0, 0);
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
 * The arena had no room for the copy: say what the copy needs, and how to
 * give it room without losing rows (the generic hint offers TRUNCATE).
 */
static void
pg_attribute_noreturn()
fc_cluster_out_of_memory(FcTable *src, FcTable *dst, MemoryContext cxt)
{
	ErrorData  *edata;
	int64		live = (int64) pg_atomic_read_u64(&src->live_rows);
	uint64		pages;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	/* the arena's error (store/arena.c), not a backend's palloc */
	if (edata->sqlerrcode != ERRCODE_OUT_OF_MEMORY ||
		strstr(edata->message, "pg_fastckpt memory is full") != edata->message)
		PG_RE_THROW();
	FlushErrorState();
	live = Max(live, 0);
	pages = ((uint64) live + dst->slots_per_page - 1) / dst->slots_per_page;
	edata->hint = psprintf("VACUUM FULL and CLUSTER need room for a copy of the table's %lld rows, about %llu kB, "
						   "until they commit. Raise pg_fastckpt.memory_limit and restart for the rewrite "
						   "(and lower it again after), or copy the rows out and back (COPY TO, TRUNCATE, COPY FROM).",
						   (long long) live,
						   (unsigned long long) (pages * FC_PAGE_SIZE / 1024));
	ReThrowError(edata);
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
	MemoryContext cxt = CurrentMemoryContext;

	fc_gate_wait(OldTable);		/* all of its rows, not what recovery has so far */
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

	PG_TRY();
	{
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
	}
	PG_CATCH();
	{
		fc_cluster_out_of_memory(st.src, st.dst, cxt);
	}
	PG_END_TRY();

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
