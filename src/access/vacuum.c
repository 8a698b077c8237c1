/*-------------------------------------------------------------------------
 *
 * vacuum.c
 *	  VACUUM of fastckpt tables: reclaim dead rows and old versions,
 *	  freeze old xids, advance relfrozenxid/relminmxid.
 *
 * 1. Reclaim every undo version no snapshot needs.
 * 2. Walk the slots: mark rows dead to everyone (FC_SLOT_DEAD), clear
 *    aborted deleters and finished lockers, freeze creators older than the
 *    freeze limit, and track the oldest xid and multi left behind.
 * 3. Remove the dead rows' index entries (ambulkdelete), then free their
 *    slots; only then can a slot be reused, so no index entry ever points
 *    at a stranger's row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/multixact.h"
#include "access/transam.h"
#include "access/xact.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/fastckpt_am.h"
#include "store/table_store.h"
#include "store/undo.h"

typedef struct FcDeadSlots
{
	uint64	   *slots;			/* ascending */
	int64		n;
	int64		cap;
} FcDeadSlots;

static void
fc_dead_add(FcDeadSlots *dead, uint64 slotno)
{
	if (dead->n == dead->cap)
	{
		dead->cap = Max(1024, dead->cap * 2);
		dead->slots = dead->slots ? repalloc_huge(dead->slots, dead->cap * sizeof(uint64)) :
			palloc_extended(dead->cap * sizeof(uint64), MCXT_ALLOC_HUGE);
	}
	dead->slots[dead->n++] = slotno;
}

static bool
fc_dead_callback(ItemPointer itemptr, void *state)
{
	FcDeadSlots *dead = (FcDeadSlots *) state;
	uint64		slotno = fc_tid_to_slot(itemptr);
	int64		lo = 0,
				hi = dead->n - 1;

	while (lo <= hi)
	{
		int64		mid = (lo + hi) / 2;

		if (dead->slots[mid] == slotno)
			return true;
		if (dead->slots[mid] < slotno)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

static void
fc_track_oldest_xid(TransactionId xid, TransactionId *oldest)
{
	if (TransactionIdIsNormal(xid) && TransactionIdPrecedes(xid, *oldest))
		*oldest = xid;
}

/*
 * The old slot of a moved row whose lockers still run: one that prepares
 * finds its lock where the row went by this slot's link
 * (prepared_row_locks.c), so the slot stays until they end.
 */
static bool
fc_lockers_follow_link(FcSlotHeader *hdr)
{
	if (!TransactionIdIsValid(hdr->xlock) || (hdr->flags & FC_SLOT_DEAD) ||
		!(hdr->flags & FC_XMAX_UPDATED) || !ItemPointerIsValid(&hdr->next_tid) ||
		ItemPointerIndicatesMovedPartitions(&hdr->next_tid))
		return false;
	return (hdr->xlock_info & FC_XLOCK_MULTI) ?
		MultiXactIdIsRunning(hdr->xlock, true) :
		TransactionIdIsInProgress(hdr->xlock);
}

void
fc_relation_vacuum(Relation rel, VacuumParams *params,
				   BufferAccessStrategy bstrategy)
{
	FcTable    *tbl = fc_table_for_rel(rel);
	GlobalVisState *vistest = GlobalVisTestFor(rel);
	TransactionId oldest_xmin;
	TransactionId freeze_limit;
	MultiXactId oldest_mxact;
	MultiXactId multi_cutoff;
	TransactionId new_frozen_xid;
	MultiXactId new_min_multi;
	FcDeadSlots dead = {0};
	uint64		nslots;
	double		live = 0;
	double		recently_dead = 0;
	int			nindexes;
	Relation   *indrels;
	bool		frozenxid_updated,
				minmulti_updated;

	fc_gate_wait(rel);
	(void) vacuum_set_xid_limits(rel, params->freeze_min_age,
								 params->freeze_table_age,
								 params->multixact_freeze_min_age,
								 params->multixact_freeze_table_age,
								 &oldest_xmin, &oldest_mxact,
								 &freeze_limit, &multi_cutoff);
	new_frozen_xid = ReadNextTransactionId();
	new_min_multi = ReadNextMultiXactId();

	/* 1. old versions */
	while (fc_undo_reclaim(tbl, vistest, 1024) > 0)
		CHECK_FOR_INTERRUPTS();

	/* 2. rows */
	nslots = fc_table_nslots(tbl);
	for (uint64 s = 0; s < nslots; s++)
	{
		LWLock	   *lock = fc_slot_lock(tbl, s);
		FcSlotHeader *hdr = fc_slot_header(tbl, s);

		if ((s & 1023) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			vacuum_delay_point();
		}
		LWLockAcquire(lock, LW_EXCLUSIVE);
		if (!(hdr->flags & FC_SLOT_USED))
		{
			LWLockRelease(lock);
			continue;
		}
		if (fc_slot_dead_to_all(hdr, vistest) && !fc_lockers_follow_link(hdr))
		{
			hdr->flags |= FC_SLOT_DEAD;
			LWLockRelease(lock);
			fc_dead_add(&dead, s);
			continue;
		}

		/* an aborted deleter leaves nothing behind */
		if (TransactionIdIsValid(hdr->xmax) && !fc_xmax_live(hdr))
		{
			hdr->xmax = InvalidTransactionId;
			hdr->flags &= ~FC_XMAX_BITS;
			ItemPointerSetInvalid(&hdr->next_tid);
		}
		if (TransactionIdIsValid(hdr->xmax))
			recently_dead += 1;
		else
			live += 1;

		/* finished lockers leave nothing behind either */
		if (TransactionIdIsValid(hdr->xlock))
		{
			bool		multi = (hdr->xlock_info & FC_XLOCK_MULTI) != 0;

			if (multi ? !MultiXactIdIsRunning(hdr->xlock, true) :
				!TransactionIdIsInProgress(hdr->xlock))
			{
				hdr->xlock = InvalidTransactionId;
				hdr->xlock_info = 0;
			}
			else if (multi)
			{
				if (MultiXactIdPrecedes(hdr->xlock, new_min_multi))
					new_min_multi = hdr->xlock;
			}
			else
				fc_track_oldest_xid(hdr->xlock, &new_frozen_xid);
		}

		/* freeze */
		if (!(hdr->flags & FC_XMIN_FROZEN) &&
			TransactionIdIsNormal(hdr->xmin) &&
			TransactionIdPrecedes(hdr->xmin, freeze_limit) &&
			fc_xmin_committed(hdr->xmin, &hdr->flags))
			hdr->flags |= FC_XMIN_FROZEN;
		if (!(hdr->flags & FC_XMIN_FROZEN))
			fc_track_oldest_xid(hdr->xmin, &new_frozen_xid);
		fc_track_oldest_xid(hdr->xmax, &new_frozen_xid);
		for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
		{
			fc_track_oldest_xid(u->xmin, &new_frozen_xid);
			fc_track_oldest_xid(u->superseded_by, &new_frozen_xid);
		}
		LWLockRelease(lock);
	}

	/* 3. index entries of dead rows, then the slots themselves */
	vac_open_indexes(rel, RowExclusiveLock, &nindexes, &indrels);
	for (int i = 0; i < nindexes; i++)
	{
		IndexVacuumInfo ivinfo;
		IndexBulkDeleteResult *stats = NULL;

		ivinfo.index = indrels[i];
		ivinfo.analyze_only = false;
		ivinfo.report_progress = false;
		ivinfo.estimated_count = false;
		ivinfo.message_level = DEBUG2;
		ivinfo.num_heap_tuples = live + recently_dead;
		ivinfo.strategy = bstrategy;

		if (dead.n > 0)
			stats = index_bulk_delete(&ivinfo, NULL, fc_dead_callback, &dead);
		stats = index_vacuum_cleanup(&ivinfo, stats);
		if (stats != NULL && !stats->estimated_count)
			vac_update_relstats(indrels[i], stats->num_pages, stats->num_index_tuples,
								0, false, InvalidTransactionId, InvalidMultiXactId,
								NULL, NULL, false);
		if (stats)
			pfree(stats);
	}
	vac_close_indexes(nindexes, indrels, NoLock);

	for (int64 i = 0; i < dead.n; i++)
		fc_slot_free(tbl, dead.slots[i]);

	vac_update_relstats(rel, fc_table_nblocks(tbl), live, 0, nindexes > 0,
						new_frozen_xid, new_min_multi,
						&frozenxid_updated, &minmulti_updated, false);
	pgstat_report_vacuum(RelationGetRelid(rel), rel->rd_rel->relisshared,
						 (PgStat_Counter) live, (PgStat_Counter) recently_dead);
	ereport(params->options & VACOPT_VERBOSE ? INFO : DEBUG2,
			(errmsg("fastckpt table \"%s\": removed " INT64_FORMAT " dead rows, %.0f live and %.0f recently dead remain",
					RelationGetRelationName(rel), dead.n, live, recently_dead)));
	if (dead.slots)
		pfree(dead.slots);
}
