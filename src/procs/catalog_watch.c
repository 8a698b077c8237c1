/*-------------------------------------------------------------------------
 *
 * catalog_watch.c
 *	  Catalog changes that logged calls must not be replayed across.
 *
 * Replay repeats a CALL record against the catalogs of the moment it runs,
 * not those the call saw: a privilege revoked, a role dropped, a schema
 * renamed or a table created earlier in the search_path after the call
 * would make replay fail (and the tables stay closed) or differ.  So a
 * transaction that runs a statement which may change the catalogs
 *
 *	1. announces itself (a shared count) before the statement runs;
 *	2. takes a checkpoint before it commits if the log after the last one
 *	   holds calls (fc_commit_checkpoint_for_calls): those are then never
 *	   replayed;
 *	3. leaves the count, and moves a shared epoch on, once its commit (and
 *	   the invalidation messages that go with it) is out.
 *
 * A statement whose changes commit inside it (COMMIT PREPARED, concurrent
 * index builds and drops, DETACH PARTITION CONCURRENTLY) takes the
 * checkpoint before it runs and is counted until it returns; the
 * transaction it leaves open (the last step of a concurrent build) is then
 * counted as above.  A COMMIT PREPARED of a transaction known to have
 * changed no catalog (noted when it was prepared) is not counted.
 *
 * A call is logged as CALL only if, at its commit, no such change is in
 * progress and none ended since the call began; otherwise it falls back
 * to row images (reason "catalog_changed").  A call that commits before
 * step 1 published its CSN first (Dekker: each side writes, then reads
 * the other's word), so the checkpoint of step 2 sees it.  A call reads
 * the epoch, then takes the invalidation messages sent so far, so it never
 * runs on catalogs older than its epoch.
 *
 * Statements that cannot change what a call sees are not counted: those
 * that change no catalog (SET, COPY, VACUUM, LOCK, ...), TRUNCATE and
 * rewrites (already checkpointed through their storage changes), and
 * temporary objects (calls that touch them fall back).  Catalog rows
 * changed with plain DML are not watched.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_auth_members.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_db_role_setting.h"
#include "catalog/pg_parameter_acl.h"
#include "catalog/pg_tablespace.h"
#include "nodes/parsenodes.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/sinval.h"
#include "storage/spin.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "procs/procs.h"
#include "recovery/gate.h"
#include "txn/write_set.h"

typedef struct FcCatalogWatch
{
	pg_atomic_uint32 changers;	/* changes between steps 1 and 3 */
	pg_atomic_uint64 epoch;		/* moved on by each step 3 */
	slock_t		plain_lock;		/* protects plain_gids */
	/* prepared transactions that changed no catalog ("": a free entry) */
	char		plain_gids[FLEXIBLE_ARRAY_MEMBER][GIDSIZE];
} FcCatalogWatch;

static FcCatalogWatch *fc_watch = NULL;
static bool fc_changing = false;	/* this transaction is counted */
static int	fc_statements_held = 0; /* statements counted until they return */
static bool fc_exit_callback_set = false;
static char fc_preparing_gid[GIDSIZE];	/* PREPARE TRANSACTION of a
										 * transaction that changed no catalog */
static bool fc_files_statement = false; /* see fc_catalog_watch_files_statement */

static void fc_catalog_watch_leave(void);

Size
fc_catalog_watch_shmem_size(void)
{
	return add_size(offsetof(FcCatalogWatch, plain_gids),
					mul_size(max_prepared_xacts, GIDSIZE));
}

void
fc_catalog_watch_shmem_init(void)
{
	bool		found;

	fc_watch = ShmemInitStruct("pg_fastckpt catalog watch",
							   fc_catalog_watch_shmem_size(), &found);
	if (!found)
	{
		pg_atomic_init_u32(&fc_watch->changers, 0);
		pg_atomic_init_u64(&fc_watch->epoch, 0);
		SpinLockInit(&fc_watch->plain_lock);
		for (int i = 0; i < max_prepared_xacts; i++)
			fc_watch->plain_gids[i][0] = '\0';
	}
}

/* Note a prepared transaction that changed no catalog (if there is room). */
static void
fc_plain_gid_add(const char *gid)
{
	SpinLockAcquire(&fc_watch->plain_lock);
	for (int i = 0; i < max_prepared_xacts; i++)
		if (fc_watch->plain_gids[i][0] == '\0')
		{
			strlcpy(fc_watch->plain_gids[i], gid, GIDSIZE);
			break;
		}
	SpinLockRelease(&fc_watch->plain_lock);
}

/*
 * Forget a prepared transaction about to be finished; was it noted as
 * changing no catalog?  Unknown ones (prepared before a restart, or with
 * no room left) count as catalog changes.
 */
static bool
fc_plain_gid_take(const char *gid)
{
	bool		found = false;

	SpinLockAcquire(&fc_watch->plain_lock);
	for (int i = 0; i < max_prepared_xacts && !found; i++)
		if (strcmp(fc_watch->plain_gids[i], gid) == 0)
		{
			fc_watch->plain_gids[i][0] = '\0';
			found = true;
		}
	SpinLockRelease(&fc_watch->plain_lock);
	return found;
}

/*
 * A commit found to change a catalog by its invalidation messages, not by
 * a statement: counted from now until it ends, so that a call committing
 * meanwhile or after it either falls back or was published first (Dekker,
 * with the caller's read of what was published).
 */
void
fc_catalog_watch_enter_at_commit(void)
{
	if (!fc_changing)
	{
		pg_atomic_fetch_add_u32(&fc_watch->changers, 1);	/* a full barrier */
		fc_changing = true;
	}
}

/* A backend exiting (FATAL skips PG_FINALLY) leaves what it holds. */
static void
fc_catalog_watch_exit(int code, Datum arg)
{
	while (fc_statements_held > 0)
	{
		fc_statements_held--;
		fc_catalog_watch_leave();
	}
}

/* Are these names all of temporary relations (DROP of temporary tables)? */
static bool
fc_all_temp_relations(List *objects)
{
	ListCell   *lc;

	foreach(lc, objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (!OidIsValid(relid) || get_rel_persistence(relid) != RELPERSISTENCE_TEMP)
			return false;
	}
	return objects != NIL;
}

/* Do the changes of this statement commit before it returns? */
static bool
fc_statement_commits_inside(Node *stmt)
{
	ListCell   *lc;

	switch (nodeTag(stmt))
	{
		case T_TransactionStmt:
			return ((TransactionStmt *) stmt)->kind == TRANS_STMT_COMMIT_PREPARED;
		case T_IndexStmt:
			return ((IndexStmt *) stmt)->concurrent;
		case T_DropStmt:
			return ((DropStmt *) stmt)->concurrent;
		case T_AlterTableStmt:
			foreach(lc, ((AlterTableStmt *) stmt)->cmds)
			{
				AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);

				if (cmd->subtype == AT_DetachPartition &&
					((PartitionCmd *) cmd->def)->concurrent)
					return true;
			}
			return false;
		default:
			return false;
	}
}

/* May this utility statement change what a replayed call would see? */
static bool
fc_statement_changes_catalogs(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_TransactionStmt:
			/* a prepared transaction's changes show at COMMIT PREPARED */
			return ((TransactionStmt *) stmt)->kind == TRANS_STMT_COMMIT_PREPARED;
		case T_ExplainStmt:
			{
				/* EXPLAIN ANALYZE CREATE TABLE AS creates the table */
				Query	   *query = (Query *) ((ExplainStmt *) stmt)->query;

				return IsA(query, Query) && query->commandType == CMD_UTILITY &&
					fc_statement_changes_catalogs(query->utilityStmt);
			}
		case T_VariableSetStmt:
		case T_VariableShowStmt:
		case T_DiscardStmt:
		case T_PrepareStmt:
		case T_ExecuteStmt:
		case T_DeallocateStmt:
		case T_DeclareCursorStmt:
		case T_FetchStmt:
		case T_ClosePortalStmt:
		case T_CopyStmt:
		case T_NotifyStmt:
		case T_ListenStmt:
		case T_UnlistenStmt:
		case T_LockStmt:
		case T_CheckPointStmt:
		case T_VacuumStmt:
		case T_CallStmt:		/* what it runs comes here itself */
		case T_DoStmt:
		case T_LoadStmt:
		case T_ConstraintsSetStmt:
		case T_ReindexStmt:
		case T_ClusterStmt:
		case T_TruncateStmt:
		case T_RefreshMatViewStmt:
		case T_AlterSystemStmt:
		case T_CommentStmt:
			/* a call sees no other database, and its own cannot be dropped */
		case T_DropdbStmt:
		case T_CreatedbStmt:
			/* nor does it create tables, where a tablespace would matter */
		case T_CreateTableSpaceStmt:
		case T_DropTableSpaceStmt:
			/* replication settings, which no replayed call can see */
		case T_CreatePublicationStmt:
		case T_AlterPublicationStmt:
		case T_CreateSubscriptionStmt:
		case T_AlterSubscriptionStmt:
		case T_DropSubscriptionStmt:
			return false;
		case T_CreateStmt:
			return ((CreateStmt *) stmt)->relation->relpersistence != RELPERSISTENCE_TEMP;
		case T_CreateTableAsStmt:
			return ((CreateTableAsStmt *) stmt)->into->rel->relpersistence != RELPERSISTENCE_TEMP;
		case T_ViewStmt:
			return ((ViewStmt *) stmt)->view->relpersistence != RELPERSISTENCE_TEMP;
		case T_CreateSeqStmt:
			return ((CreateSeqStmt *) stmt)->sequence->relpersistence != RELPERSISTENCE_TEMP;
		case T_DropStmt:
			{
				DropStmt   *drop = (DropStmt *) stmt;

				if (drop->removeType == OBJECT_TABLE || drop->removeType == OBJECT_VIEW ||
					drop->removeType == OBJECT_SEQUENCE || drop->removeType == OBJECT_INDEX)
					return !fc_all_temp_relations(drop->objects);
				return drop->removeType != OBJECT_PUBLICATION;
			}
		default:
			return true;
	}
}

/* Step 1 for a transaction; the checkpoint comes at its commit. */
static void
fc_catalog_watch_enter_transaction(void)
{
	fc_catalog_watch_enter_at_commit();
	fc_commit_require_checkpoint();
}

/*
 * Step 1, from the utility hook before the statement runs.  Returns true
 * for a statement whose changes commit inside it: the caller runs it and
 * then calls fc_catalog_watch_statement_end, whether it returned or
 * failed.  Not in recovery's processes, which replay what was logged.
 */
bool
fc_catalog_watch_statement(Node *stmt)
{
	if (fc_in_recovery_worker)
		return false;
	if (IsA(stmt, CreatedbStmt) || IsA(stmt, DropdbStmt) ||
		IsA(stmt, CreateTableSpaceStmt) || IsA(stmt, DropTableSpaceStmt))
		fc_files_statement = true;
	if (IsA(stmt, TransactionStmt))
	{
		TransactionStmt *ts = (TransactionStmt *) stmt;

		switch (ts->kind)
		{
			case TRANS_STMT_PREPARE:
				/* noted once prepared (fc_catalog_watch_prepared) */
				if (!fc_changing)
					strlcpy(fc_preparing_gid, ts->gid, GIDSIZE);
				return false;
			case TRANS_STMT_COMMIT_PREPARED:
				if (fc_plain_gid_take(ts->gid))
					return false;
				break;
			case TRANS_STMT_ROLLBACK_PREPARED:
				(void) fc_plain_gid_take(ts->gid);
				return false;
			default:
				return false;
		}
	}
	else if (!fc_statement_changes_catalogs(stmt))
		return false;

	if (!fc_statement_commits_inside(stmt))
	{
		fc_catalog_watch_enter_transaction();
		return false;
	}
	if (!fc_exit_callback_set)
	{
		before_shmem_exit(fc_catalog_watch_exit, (Datum) 0);
		fc_exit_callback_set = true;
	}
	pg_atomic_fetch_add_u32(&fc_watch->changers, 1);	/* a full barrier */
	fc_statements_held++;
	PG_TRY();
	{
		fc_commit_checkpoint_for_calls(true);
	}
	PG_CATCH();
	{
		fc_catalog_watch_statement_end(stmt, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return true;
}

/*
 * A statement that committed inside has returned (returned: true) or
 * failed.  A concurrent build or drop returns inside its last transaction,
 * whose commit changes the catalogs once more: that one is counted as any.
 */
void
fc_catalog_watch_statement_end(Node *stmt, bool returned)
{
	if (returned && !IsA(stmt, TransactionStmt))
		fc_catalog_watch_enter_transaction();
	fc_statements_held--;
	fc_catalog_watch_leave();
}

/* PREPARE TRANSACTION succeeded (XACT_EVENT_PREPARE). */
void
fc_catalog_watch_prepared(void)
{
	if (fc_preparing_gid[0] != '\0' && !fc_changing)
		fc_plain_gid_add(fc_preparing_gid);
	fc_preparing_gid[0] = '\0';
}

static void
fc_catalog_watch_leave(void)
{
	pg_atomic_fetch_add_u64(&fc_watch->epoch, 1);
	pg_atomic_fetch_sub_u32(&fc_watch->changers, 1);
}

/*
 * Step 3: the transaction has ended, and PostgreSQL has sent its
 * invalidation messages (after the commit callbacks) and released its
 * locks.  At PREPARE TRANSACTION too: its changes show at COMMIT PREPARED,
 * which is watched itself.
 */
static void
fc_catalog_watch_release(ResourceReleasePhase phase, bool isCommit,
						 bool isTopLevel, void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	fc_preparing_gid[0] = '\0';	/* a PREPARE that failed */
	fc_files_statement = false;
	if (!fc_changing)
		return;
	fc_changing = false;
	fc_catalog_watch_leave();
}

void
fc_catalog_watch_register_callbacks(void)
{
	RegisterResourceReleaseCallback(fc_catalog_watch_release, NULL);
}

/*
 * Is this transaction a CREATE or DROP of a database or tablespace?  Those
 * run alone, outside any transaction block, and make or remove files
 * before they commit, which a refusal at commit would leave half done; and
 * none changes what a replayed call sees.
 */
bool
fc_catalog_watch_files_statement(void)
{
	return fc_files_statement;
}

/*
 * Is this one of the shared catalogs a replayed call can depend on: roles,
 * memberships, databases (and their settings), tablespaces, privileges on
 * settings?  Not the dependency and comment catalogs, which local objects'
 * owners and comments change, nor subscriptions and replication origins.
 */
static bool
fc_shared_catalog_matters(Oid relid)
{
	return relid == AuthIdRelationId || relid == AuthMemRelationId ||
		relid == DatabaseRelationId || relid == DbRoleSettingRelationId ||
		relid == TableSpaceRelationId || relid == ParameterAclRelationId;
}

/* ... and is this a catalog cache of one of those? */
static bool
fc_shared_cache_matters(int cacheid)
{
	switch (cacheid)
	{
		case AUTHMEMMEMROLE:
		case AUTHMEMROLEMEM:
		case AUTHNAME:
		case AUTHOID:
		case DATABASEOID:
		case TABLESPACEOID:
		case PARAMETERACLNAME:
		case PARAMETERACLOID:
			return true;
		default:
			return false;
	}
}

/*
 * Has this transaction changed a shared catalog that other databases'
 * calls can depend on (fc_shared_catalog_matters)?  Its invalidation
 * messages say so: those of shared catalogs carry no database.  At
 * commit, from the top transaction.
 */
bool
fc_catalog_watch_shared_changes(void)
{
	SharedInvalidationMessage *msgs;
	bool		init_file;
	int			n = xactGetCommittedInvalidationMessages(&msgs, &init_file);

	for (int i = 0; i < n; i++)
	{
		const SharedInvalidationMessage *m = &msgs[i];

		if (m->id >= 0)
		{
			if (!OidIsValid(m->cc.dbId) && fc_shared_cache_matters(m->cc.id))
				return true;
		}
		else if (m->id == SHAREDINVALCATALOG_ID)
		{
			if (!OidIsValid(m->cat.dbId) && fc_shared_catalog_matters(m->cat.catId))
				return true;
		}
		else if (m->id == SHAREDINVALRELCACHE_ID)
		{
			if (!OidIsValid(m->rc.dbId) && fc_shared_catalog_matters(m->rc.relId))
				return true;
		}
		else if (m->id == SHAREDINVALSNAPSHOT_ID)
		{
			/* settings (pg_db_role_setting) have no cache: only this */
			if (!OidIsValid(m->sn.dbId) && fc_shared_catalog_matters(m->sn.relId))
				return true;
		}
	}
	return false;
}

/*
 * For a call beginning: compare with fc_catalog_changed_since at commit.
 * The invalidations of every change that ended before the epoch was read
 * are sent; taking them now makes the call run on catalogs at least that
 * new (a relation lock already held would not take them).
 */
uint64
fc_catalog_epoch(void)
{
	uint64		epoch = pg_atomic_read_u64(&fc_watch->epoch);

	pg_read_barrier();
	AcceptInvalidationMessages();
	return epoch;
}

/*
 * At a call's commit, under the install latch, after its CSN was published
 * (fc_ckpt_note_call): did a catalog change overlap the call?  The count
 * is read before the epoch, which a leaving change moves on first.
 */
bool
fc_catalog_changed_since(uint64 epoch)
{
	pg_memory_barrier();
	if (pg_atomic_read_u32(&fc_watch->changers) > 0)
		return true;
	pg_read_barrier();
	return pg_atomic_read_u64(&fc_watch->epoch) != epoch;
}
