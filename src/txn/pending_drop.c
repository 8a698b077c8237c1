/*-------------------------------------------------------------------------
 *
 * pending_drop.c
 *	  Table storages to free when the transaction ends, like PostgreSQL's
 *	  pending file deletes: the old storage of a TRUNCATE or rewrite and of
 *	  a dropped table at commit, a new storage at abort.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/storage.h"
#include "utils/memutils.h"

#include "procs/procs.h"
#include "recovery/gate.h"
#include "store/table_store.h"
#include "txn/write_set.h"

typedef struct FcPendingDrop
{
	RelFileNode rnode;			/* dbNode only, relNode invalid: a database */
	bool		at_commit;
	bool		is_temp;		/* a temporary table's: nothing to log */
	int			nestlevel;
	struct FcPendingDrop *next;
} FcPendingDrop;

static FcPendingDrop *fc_pending = NULL;

static void
fc_pending_add(const RelFileNode *rnode, bool at_commit, bool is_temp)
{
	FcPendingDrop *p = MemoryContextAlloc(TopMemoryContext, sizeof(FcPendingDrop));

	p->rnode = *rnode;
	p->at_commit = at_commit;
	p->is_temp = is_temp;
	p->nestlevel = GetCurrentTransactionNestLevel();
	p->next = fc_pending;
	fc_pending = p;
}

void
fc_pending_drop_add(const RelFileNode *rnode, bool at_commit, bool is_temp)
{
	fc_pending_add(rnode, at_commit, is_temp);
}

/*
 * DROP TABLE of a fastckpt table.  A temporary table's storage created at
 * this nesting level goes at once: only aborting this level could bring
 * the table back, and that drops the storage anyway.  Kept until commit,
 * a routine creating and dropping a scratch table would pile storages up
 * against the session's share (temp_quota.c).
 */
void
fc_pending_drop_table(const RelFileNode *rnode, bool is_temp)
{
	int			level = GetCurrentTransactionNestLevel();

	if (is_temp)
	{
		for (FcPendingDrop **link = &fc_pending; *link != NULL; link = &(*link)->next)
		{
			FcPendingDrop *p = *link;

			if (!p->at_commit && p->is_temp && p->nestlevel == level &&
				RelFileNodeEquals(p->rnode, *rnode))
			{
				*link = p->next;
				pfree(p);
				fc_table_drop_kind(rnode, true, true);
				return;
			}
		}
	}
	fc_pending_add(rnode, true, is_temp);
}

void
fc_pending_drop_database(Oid dbid)
{
	RelFileNode rnode;

	rnode.spcNode = InvalidOid;
	rnode.dbNode = dbid;
	rnode.relNode = InvalidOid;
	fc_pending_add(&rnode, true, false);
}

static void
fc_do_drop(FcPendingDrop *p)
{
	if (OidIsValid(p->rnode.relNode))
		fc_table_drop_kind(&p->rnode, true, p->is_temp);
	else
	{
		fc_table_drop_database(p->rnode.dbNode);
		fc_procs_forget(p->rnode.dbNode, InvalidOid);
		fc_gate_forget_database(p->rnode.dbNode);
	}
}

void
fc_pending_drops_at_xact_end(bool commit)
{
	while (fc_pending != NULL)
	{
		FcPendingDrop *p = fc_pending;

		fc_pending = p->next;
		if (p->at_commit == commit)
			fc_do_drop(p);
		pfree(p);
	}
}

void
fc_pending_drops_at_subxact_end(bool commit, int nestlevel)
{
	FcPendingDrop **link = &fc_pending;

	while (*link != NULL)
	{
		FcPendingDrop *p = *link;

		if (p->nestlevel < nestlevel)
		{
			link = &p->next;
			continue;
		}
		if (commit)
		{
			p->nestlevel = nestlevel - 1;
			link = &p->next;
			continue;
		}
		/* subtransaction aborted: its new storages go, its drops are void */
		*link = p->next;
		if (!p->at_commit)
			fc_do_drop(p);
		pfree(p);
	}
}

/*
 * The storage changes this transaction will make if it commits: storages
 * it created (dropped at abort) and storages or databases it drops.  A
 * storage both created and dropped here changes nothing, and temporary
 * tables' storages are not logged.  For the commit record; creates come
 * first.
 */
List *
fc_pending_storage_changes(void)
{
	List	   *creates = NIL;
	List	   *drops = NIL;

	for (FcPendingDrop *p = fc_pending; p != NULL; p = p->next)
	{
		bool		cancelled = p->is_temp;

		for (FcPendingDrop *q = fc_pending; q != NULL; q = q->next)
			if (q != p && q->at_commit != p->at_commit &&
				RelFileNodeEquals(q->rnode, p->rnode))
				cancelled = true;
		if (cancelled)
			continue;
		if (p->at_commit)
			drops = lappend(drops, p);
		else
			creates = lcons(p, creates);	/* oldest first */
	}
	return list_concat(creates, drops);
}

const RelFileNode *
fc_pending_change_rnode(void *change, bool *is_drop)
{
	FcPendingDrop *p = (FcPendingDrop *) change;

	*is_drop = p->at_commit;
	return &p->rnode;
}

/* Has this transaction created or dropped storages (temporary ones too)? */
bool
fc_pending_changes_exist(void)
{
	return fc_pending != NULL;
}

/*
 * The (sub)transaction aborts: if it created relation files, make its abort
 * record durable now.  PostgreSQL's crash recovery recreates the files from
 * their creation record; only the abort record removes them again.
 * Without it, the end of recovery copies an unlogged relation's init fork
 * over the main fork the creation left, fails on the existing file, and the
 * server does not start (a PostgreSQL bug that every unlogged table or
 * index created and rolled back just before a crash meets; fastckpt tables
 * and their indexes are unlogged to PostgreSQL).
 */
void
fc_abort_flush_created_files(void)
{
	RelFileNode *rels;

	if (smgrGetPendingDeletes(false, &rels) > 0)
	{
		pfree(rels);
		/* the abort record's end is gone (XactLastRecEnd was reset) */
		XLogFlush(fc_wal_records_end());
	}
}

/*
 * The end of the WAL records inserted so far, a position XLogFlush accepts:
 * where the last record ended on a page boundary, the insert position is
 * past the next page's header, which no record reached yet, and flushing
 * there fails ("xlog flush request ... is not satisfied").
 */
XLogRecPtr
fc_wal_records_end(void)
{
	XLogRecPtr	upto = GetXLogInsertRecPtr();

	if (XLogSegmentOffset(upto, wal_segment_size) == SizeOfXLogLongPHD)
		upto -= SizeOfXLogLongPHD;
	else if (upto % XLOG_BLCKSZ == SizeOfXLogShortPHD)
		upto -= SizeOfXLogShortPHD;
	return upto;
}

/*
 * Does this transaction drop a logged storage at commit?  Not counted: a
 * dropped database, whose logged calls recovery skips with it, and which
 * no call of another database can touch (nor need a checkpoint for: the
 * way out of a database whose tables stay closed).
 */
bool
fc_pending_drops_exist(void)
{
	for (FcPendingDrop *p = fc_pending; p != NULL; p = p->next)
		if (p->at_commit && !p->is_temp && OidIsValid(p->rnode.relNode))
			return true;
	return false;
}
