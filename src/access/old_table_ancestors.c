/*-------------------------------------------------------------------------
 *
 * old_table_ancestors.c
 *	  Does an UPDATE through some ancestor of a table fill an OLD TABLE?
 *
 * An UPDATE of a partitioned table, or of an inheritance parent, captures
 * the old rows of its partitions and children into the parent's transition
 * table by TID, after the write.  Such rows must then be moved rather than
 * updated in place (modify.c).  The ancestors are found through
 * pg_inherits, which holds both partitions and inheritance children; the
 * verdict is kept per table until any relcache invalidation, since a
 * trigger added to an ancestor invalidates the ancestor, not the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/rel.h"

#include "access/fastckpt_am.h"

typedef struct FcAncestorVerdict
{
	Oid			relid;			/* hash key */
	bool		captures_old_rows;
} FcAncestorVerdict;

static HTAB *fc_verdicts = NULL;

/* Direct parents of relid, partition parent or inheritance parents. */
static List *
fc_direct_parents(Oid relid)
{
	Relation	inherits = table_open(InheritsRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *parents = NIL;

	ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(inherits, InheritsRelidSeqnoIndexId, true,
							  NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		parents = lappend_oid(parents, ((Form_pg_inherits) GETSTRUCT(tup))->inhparent);
	systable_endscan(scan);
	table_close(inherits, AccessShareLock);
	return parents;
}

/*
 * Has the table an UPDATE trigger with an OLD TABLE?  Read from pg_trigger
 * rather than the relcache, which would lock the ancestor: an UPDATE of a
 * child alone does not lock its parents, and must not queue behind DDL on
 * them.
 */
static bool
fc_has_old_table_trigger(Oid relid)
{
	Relation	triggers = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found = false;

	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(triggers, TriggerRelidNameIndexId, true,
							  NULL, 1, &key);
	while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_trigger trig = (Form_pg_trigger) GETSTRUCT(tup);
		bool		isnull;

		(void) heap_getattr(tup, Anum_pg_trigger_tgoldtable,
							RelationGetDescr(triggers), &isnull);
		found = !isnull && TRIGGER_FOR_UPDATE(trig->tgtype);
	}
	systable_endscan(scan);
	table_close(triggers, AccessShareLock);
	return found;
}

static bool
fc_compute_verdict(Oid relid)
{
	List	   *ancestors = fc_direct_parents(relid);
	bool		captures = false;

	/* the list grows as it is walked: breadth first, each ancestor once */
	for (int i = 0; i < list_length(ancestors) && !captures; i++)
	{
		Oid			ancestor_id = list_nth_oid(ancestors, i);
		List	   *parents;
		ListCell   *lc;

		captures = fc_has_old_table_trigger(ancestor_id);
		parents = fc_direct_parents(ancestor_id);
		foreach(lc, parents)
			ancestors = list_append_unique_oid(ancestors, lfirst_oid(lc));
		list_free(parents);
	}
	list_free(ancestors);
	return captures;
}

bool
fc_ancestor_captures_old_rows(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	FcAncestorVerdict *entry;
	bool		found;
	bool		captures;

	if (fc_verdicts == NULL)
		fc_verdicts = fc_relid_cache_create("fastckpt OLD TABLE ancestors",
											sizeof(FcAncestorVerdict));
	entry = hash_search(fc_verdicts, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->captures_old_rows;

	/* the look-up may take invalidations: enter the verdict after it */
	captures = fc_compute_verdict(relid);
	entry = hash_search(fc_verdicts, &relid, HASH_ENTER, &found);
	entry->captures_old_rows = captures;
	return captures;
}
