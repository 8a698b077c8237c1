/*-------------------------------------------------------------------------
 *
 * tid_versions.c
 *	  Which version of a row the executor means by a TID.
 *
 * On heap a TID names one version of a row.  Here an in-place update keeps
 * the row's TID, so the same TID stands for the version a scan returned,
 * for the version an update just replaced, and for the newest version.
 * Two executor paths need a version other than the one the callbacks would
 * otherwise pick, and the access method sees them coming only from the
 * call just before:
 *
 * - right after an in-place update, ExecARUpdateTriggers reads the old row
 *   back by TID for its AFTER UPDATE triggers (foreign keys: were they
 *   shown the new row, the check would always run and lock the referenced
 *   row FOR KEY SHARE, as if the key had changed);
 * - INSERT ... ON CONFLICT locks the row its uniqueness probe found with a
 *   dirty snapshot: the newest version, which the current command (or a
 *   trigger it fired) may have written, and which heap then reports as
 *   invisible ("cannot affect row a second time").  A TID a scan found
 *   names an older version, which heap reports as modified by the command,
 *   and the executor skips the row.
 *
 * Each note is taken by the next call that reads it and holds only if the
 * row is still as noted.  Only executor probes (index_rescan first) are
 * noted, not the uniqueness checks of index insertions, and only locks
 * other than ExecLockRows' (TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS) may
 * take one.  ON CONFLICT locks right after its probe, so a probe note is
 * dropped as soon as a scan returns a row, and when a statement ends: a
 * probe that locked nothing (DO NOTHING, an exclusion check) must not be
 * taken for the lock of a row a scan found.  Probes are noted only of a
 * table an ON CONFLICT DO UPDATE of a running statement inserts into (a
 * probe of a DO NOTHING CTE may come between a scan's row and its
 * trigger's lock), and notes and the statements' targets are dropped when
 * a (sub)transaction aborts: a failed statement has no ExecutorEnd.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/partition.h"
#include "executor/execdesc.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "access/fastckpt_am.h"

static struct
{
	Oid			relid;
	ItemPointerData tid;
	CommandId	cid;
	FcUndo	   *undo;			/* the replaced version; NULL: no note */
} fc_replaced_row;

static struct
{
	Oid			relid;			/* InvalidOid: no note */
	ItemPointerData tid;
	TransactionId xmin;			/* the live version the probe found */
	CommandId	cmin;
} fc_probed_row;

/*
 * The target tables of the ON CONFLICT DO UPDATEs of the statements
 * running, one entry per target and statement; and how many entries there
 * were as each open subtransaction began, to drop those of statements that
 * failed in it (they have no ExecutorEnd).
 */
static List *fc_upsert_targets = NIL;
static int *fc_targets_at_level = NULL;
static int	fc_levels_allocated = 0;

/* An in-place update by command cid pushed the replaced version as undo. */
void
fc_note_replaced_row(Relation rel, ItemPointer tid, CommandId cid, FcUndo *undo)
{
	fc_replaced_row.relid = RelationGetRelid(rel);
	fc_replaced_row.tid = *tid;
	fc_replaced_row.cid = cid;
	fc_replaced_row.undo = undo;
}

void
fc_forget_replaced_row(void)
{
	fc_replaced_row.undo = NULL;
}

/*
 * The undo record holding the version the last in-place update replaced,
 * if it was of this row; forgets it either way.  The caller checks, under
 * the slot latch, that the record still is that version
 * (fc_version_replaced_by_own_update).
 */
FcUndo *
fc_take_replaced_row(Relation rel, ItemPointer tid, CommandId *cid)
{
	FcUndo	   *undo = fc_replaced_row.undo;

	fc_replaced_row.undo = NULL;
	if (undo == NULL || fc_replaced_row.relid != RelationGetRelid(rel) ||
		!ItemPointerEquals(&fc_replaced_row.tid, tid))
		return NULL;
	*cid = fc_replaced_row.cid;
	return undo;
}

/* A dirty-snapshot index probe found this live version of the row. */
void
fc_note_probed_row(Relation rel, ItemPointer tid, TransactionId xmin, CommandId cmin)
{
	fc_probed_row.relid = RelationGetRelid(rel);
	fc_probed_row.tid = *tid;
	fc_probed_row.xmin = xmin;
	fc_probed_row.cmin = cmin;
}

/*
 * Is the row's live version (xmin, cmin) the one the last dirty probe
 * found at this TID?  Forgets the probe either way.
 */
bool
fc_take_probed_row(Relation rel, ItemPointer tid, TransactionId xmin, CommandId cmin)
{
	bool		same;

	same = OidIsValid(fc_probed_row.relid) &&
		fc_probed_row.relid == RelationGetRelid(rel) &&
		ItemPointerEquals(&fc_probed_row.tid, tid) &&
		TransactionIdEquals(fc_probed_row.xmin, xmin) &&
		fc_probed_row.cmin == cmin;
	fc_probed_row.relid = InvalidOid;
	return same;
}

/*
 * A probe is only ON CONFLICT's if its lock comes in the same executor
 * run: forget it when a statement ends (one run inside a trigger, e.g. an
 * INSERT ... ON CONFLICT DO NOTHING, must not leave it to the outer
 * statement's next row lock).
 */
void
fc_forget_probed_row(void)
{
	fc_probed_row.relid = InvalidOid;
}

/* The target tables of this statement's ON CONFLICT DO UPDATEs. */
static List *
fc_statement_upsert_targets(PlannedStmt *ps)
{
	List	   *targets = NIL;
	ListCell   *lc;

	if (ps == NULL || ps->commandType == CMD_UTILITY)
		return NIL;
	/* at the top, or in a CTE */
	for (int i = -1; i < list_length(ps->subplans); i++)
	{
		ModifyTable *mt = (ModifyTable *) (i < 0 ? ps->planTree : list_nth(ps->subplans, i));

		if (mt == NULL || !IsA(mt, ModifyTable) ||
			mt->onConflictAction != ONCONFLICT_UPDATE)
			continue;
		foreach(lc, mt->resultRelations)
			targets = lappend_oid(targets, rt_fetch(lfirst_int(lc), ps->rtable)->relid);
	}
	return targets;
}

void
fc_probes_statement_start(QueryDesc *qd)
{
	List	   *targets = fc_statement_upsert_targets(qd->plannedstmt);

	if (targets != NIL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		fc_upsert_targets = list_concat(fc_upsert_targets, targets);
		MemoryContextSwitchTo(old);
		list_free(targets);
	}
}

void
fc_probes_statement_end(QueryDesc *qd)
{
	List	   *targets;
	ListCell   *lc;

	fc_forget_probed_row();
	if (fc_upsert_targets == NIL)
		return;
	targets = fc_statement_upsert_targets(qd->plannedstmt);
	foreach(lc, targets)
		fc_upsert_targets = list_delete_oid(fc_upsert_targets, lfirst_oid(lc));
	list_free(targets);
}

/*
 * May an ON CONFLICT DO UPDATE lock the row a dirty probe of this table
 * finds now?  It inserts into the table, or into a partitioned table the
 * row is routed from.
 */
bool
fc_probes_wanted(Relation rel)
{
	List	   *ancestors;
	ListCell   *lc;
	bool		wanted = false;

	if (fc_upsert_targets == NIL)
		return false;
	if (list_member_oid(fc_upsert_targets, RelationGetRelid(rel)))
		return true;
	if (!rel->rd_rel->relispartition)
		return false;
	ancestors = get_partition_ancestors(RelationGetRelid(rel));
	foreach(lc, ancestors)
		wanted |= list_member_oid(fc_upsert_targets, lfirst_oid(lc));
	list_free(ancestors);
	return wanted;
}

/* A subtransaction begins: remember which statements ran before it. */
void
fc_tid_notes_at_subxact_start(int level)
{
	if (level >= fc_levels_allocated)
	{
		int			n = Max(level + 1, 2 * fc_levels_allocated);

		fc_targets_at_level = fc_targets_at_level == NULL ?
			MemoryContextAllocZero(TopMemoryContext, n * sizeof(int)) :
			repalloc(fc_targets_at_level, n * sizeof(int));
		fc_levels_allocated = n;
	}
	fc_targets_at_level[level] = list_length(fc_upsert_targets);
}

/*
 * A (sub)transaction aborted: its failed statements left their notes and
 * their targets, and the undo version a replaced-row note names may be
 * gone.  A transaction's end drops every target.
 */
void
fc_tid_notes_at_abort(int level)
{
	fc_forget_probed_row();
	fc_forget_replaced_row();
	if (level > 0 && level < fc_levels_allocated)
		fc_upsert_targets = list_truncate(fc_upsert_targets, fc_targets_at_level[level]);
	else if (level == 0)
		fc_tid_notes_at_xact_end();
}

void
fc_tid_notes_at_xact_end(void)
{
	list_free(fc_upsert_targets);
	fc_upsert_targets = NIL;
}
