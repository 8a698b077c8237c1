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
 * taken for the lock of a row a scan found.  Probes are noted only while a
 * statement with an ON CONFLICT DO UPDATE runs (a probe of a DO NOTHING
 * CTE may come between a scan's row and its trigger's lock), and notes are
 * dropped when a (sub)transaction aborts: a failed statement has no end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/execdesc.h"
#include "nodes/plannodes.h"
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
 * Statements with an ON CONFLICT DO UPDATE that are running: at most; one
 * that failed counts until the transaction ends.
 */
static int	fc_upserts_running = 0;

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

static bool
fc_plan_upserts(Plan *plan)
{
	return plan != NULL && IsA(plan, ModifyTable) &&
		((ModifyTable *) plan)->onConflictAction == ONCONFLICT_UPDATE;
}

/* Has this statement an ON CONFLICT DO UPDATE, at its top or in a CTE? */
static bool
fc_statement_upserts(QueryDesc *qd)
{
	PlannedStmt *ps = qd->plannedstmt;
	ListCell   *lc;

	if (ps == NULL || ps->commandType == CMD_UTILITY)
		return false;
	if (fc_plan_upserts(ps->planTree))
		return true;
	foreach(lc, ps->subplans)
	{
		if (fc_plan_upserts((Plan *) lfirst(lc)))
			return true;
	}
	return false;
}

void
fc_probes_statement_start(QueryDesc *qd)
{
	if (fc_statement_upserts(qd))
		fc_upserts_running++;
}

void
fc_probes_statement_end(QueryDesc *qd)
{
	fc_forget_probed_row();
	if (fc_upserts_running > 0 && fc_statement_upserts(qd))
		fc_upserts_running--;
}

/* May the executor lock the row a dirty probe finds now? */
bool
fc_probes_wanted(void)
{
	return fc_upserts_running > 0;
}

/*
 * A (sub)transaction aborted: its failed statements left their notes, and
 * the undo version a replaced-row note names may be gone.
 */
void
fc_tid_notes_at_abort(bool top_level)
{
	fc_forget_probed_row();
	fc_forget_replaced_row();
	if (top_level)
		fc_upserts_running = 0;
}
