/*-------------------------------------------------------------------------
 *
 * prepare_locks.c
 *	  Refuse PREPARE TRANSACTION while holding table locks that would keep
 *	  fastckpt tables closed after a restart.
 *
 * A prepared transaction keeps its heavyweight locks across a restart, and
 * COMMIT PREPARED waits for startup recovery.  Recovery reads every
 * fastckpt table (AccessShareLock), refills its indexes and replays logged
 * calls (RowExclusiveLock on tables and indexes).  A prepared lock that
 * conflicts with those (SHARE or stronger: LOCK TABLE, CREATE INDEX,
 * REINDEX, ALTER INDEX) would stall recovery until somebody rolled the
 * prepared transaction back, undoing what it promised to commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/index.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"

#include "access/fastckpt_am.h"
#include "txn/write_set.h"

/* Modes that conflict with RowExclusiveLock, the strongest recovery takes. */
static LOCKMASK
fc_recovery_blocking_modes(void)
{
	LOCKMASK	mask = 0;

	for (LOCKMODE mode = ShareLock; mode <= AccessExclusiveLock; mode++)
		mask |= LOCKBIT_ON(mode);
	return mask;
}

/* The fastckpt table a relation is or indexes, or InvalidOid. */
static Oid
fc_fastckpt_table_of(Oid relid)
{
	if (get_rel_relkind(relid) == RELKIND_INDEX)
		relid = IndexGetRelation(relid, true);
	return fc_relid_is_fastckpt(relid) ? relid : InvalidOid;
}

void
fc_prepare_check_table_locks(void)
{
	LOCKMASK	blocking = fc_recovery_blocking_modes();
	LockData   *data = GetLockStatusData();

	for (int i = 0; i < data->nelements; i++)
	{
		LockInstanceData *inst = &data->locks[i];
		Oid			table;

		if (inst->pid != MyProcPid ||
			inst->locktag.locktag_type != LOCKTAG_RELATION ||
			inst->locktag.locktag_field1 != MyDatabaseId ||
			(inst->holdMask & blocking) == 0)
			continue;
		table = fc_fastckpt_table_of(inst->locktag.locktag_field2);
		if (!OidIsValid(table))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot PREPARE a transaction that holds a SHARE or stronger lock on fastckpt table \"%s\" or its indexes",
						get_rel_name(table)),
				 errdetail("A prepared transaction keeps its locks across a restart, and startup recovery must read and write every fastckpt table before COMMIT PREPARED can run: the tables would stay closed until the transaction was rolled back."),
				 errhint("Commit or roll back instead, or keep SHARE and stronger locks on fastckpt tables (LOCK TABLE, CREATE INDEX, REINDEX) out of two-phase transactions.")));
	}
}
