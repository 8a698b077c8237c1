/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  DDL integration: make fastckpt tables unlogged, refuse what cannot
 *	  work, and free storage of dropped tables and databases.
 *
 * fastckpt tables are unlogged from PostgreSQL's point of view so that
 * their indexes write no WAL; durability comes from pg_fastckpt itself.
 * The CREATE statements are adjusted before PostgreSQL runs them; ALTER
 * TABLE ... SET ACCESS METHOD fastckpt gets SET UNLOGGED added, and SET
 * LOGGED is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "commands/cluster.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/sequence.h"
#include "commands/tablecmds.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "procs/procs.h"
#include "recovery/gate.h"
#include "store/row_size.h"
#include "store/table_store.h"
#include "txn/prepared.h"
#include "txn/write_set.h"

static ProcessUtility_hook_type prev_process_utility = NULL;
static object_access_hook_type prev_object_access = NULL;

/*
 * The CREATE DATABASE, or ALTER DATABASE ... SET TABLESPACE, being run:
 * PostgreSQL calls the object access hook once it holds the database, and
 * the work is done there (fc_object_access).
 */
static Node *fc_database_stmt = NULL;

bool
fc_is_fastckpt_name(const char *am)
{
	if (am == NULL)
		am = default_table_access_method;
	return am != NULL && strcmp(am, FASTCKPT_AM_NAME) == 0;
}

/* Is this relation a fastckpt table?  (No lock taken; fine for checks.) */
bool
fc_relid_is_fastckpt(Oid relid)
{
	HeapTuple	tup;
	bool		result = false;
	Oid			amoid = get_table_am_oid(FASTCKPT_AM_NAME, true);

	if (!OidIsValid(amoid) || !OidIsValid(relid))
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_class) GETSTRUCT(tup))->relam == amoid;
		ReleaseSysCache(tup);
	}
	return result;
}

static void
fc_check_alter_table(AlterTableStmt *stmt, bool *add_unlogged, bool *set_logged)
{
	Oid			relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	bool		is_fc = fc_relid_is_fastckpt(relid);
	ListCell   *lc;

	*add_unlogged = false;
	*set_logged = false;
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_SetLogged)
			*set_logged = true;

		if (cmd->subtype == AT_SetLogged && is_fc)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("fastckpt table \"%s\" cannot be made logged", stmt->relation->relname),
					 errdetail("fastckpt tables are made durable by pg_fastckpt, not by PostgreSQL's WAL; "
							   "they show as unlogged so that their indexes write no WAL."),
					 errhint("To make it an ordinary logged table, run ALTER TABLE ... SET ACCESS METHOD heap first.")));
		if (cmd->subtype == AT_SetAccessMethod && !is_fc &&
			fc_is_fastckpt_name(cmd->name) &&
			get_rel_persistence(relid) == RELPERSISTENCE_PERMANENT)
			*add_unlogged = true;
	}
}

/* The value of option name of a CREATE or ALTER DATABASE, NULL if absent or DEFAULT. */
static const char *
fc_database_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, name) == 0)
			return opt->arg ? defGetString(opt) : NULL;
	}
	return NULL;
}

static Oid
fc_database_tablespace(Oid dbid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dbid));
	Oid			spcid;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for database %u", dbid);
	spcid = ((Form_pg_database) GETSTRUCT(tup))->dattablespace;
	ReleaseSysCache(tup);
	return spcid;
}

/*
 * ALTER DATABASE ... SET TABLESPACE moves the files of every relation in
 * the database's default tablespace, which changes the key fastckpt keeps
 * their rows under: they would look empty, and be dropped at the next
 * restart.  Refused while such a table has rows, or ever had one (its
 * index may point at slots).  Checked before PostgreSQL copies the files,
 * and again once it holds the database with no session in it
 * (fc_moved_database), since a session may write meanwhile.
 */
static void
fc_check_move_database(AlterDatabaseStmt *stmt, Oid dbid, Oid cur_spc)
{
	const char *spcname = fc_database_option(stmt->options, "tablespace");
	int			used;

	if (get_tablespace_oid(spcname, true) == cur_spc)
		return;					/* a no-op for PostgreSQL too */
	used = fc_storage_count_used(dbid, cur_spc);
	if (used > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot move database \"%s\" to tablespace \"%s\": it has fastckpt tables",
						stmt->dbname, spcname),
				 errdetail_plural("%d fastckpt table in the database's default tablespace holds rows; pg_fastckpt keeps them in shared memory under that tablespace, and moving the database would leave the table without them.",
								  "%d fastckpt tables in the database's default tablespace hold rows; pg_fastckpt keeps them in shared memory under that tablespace, and moving the database would leave the tables without them.",
								  used, used),
				 errhint("Convert those tables with ALTER TABLE ... SET ACCESS METHOD heap before the move and back to fastckpt after it, or dump and restore them.")));
}

/*
 * A database whose tables startup recovery left closed holds them only
 * part way (the rest is in the log): never copy or move that.
 */
static void
fc_error_if_database_closed(Oid dbid)
{
	if (!OidIsValid(dbid) || !fc_gate_database_closed(dbid, NULL, 0))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the fastckpt tables of database \"%s\" are not available: startup recovery could not restore them",
					fc_gate_database_label(dbid)),
			 errdetail("A logged call of a registered routine could not be repeated there; the server log says which."),
			 errhint("Put back what the call needs and restart the server, then retry.")));
}

/*
 * Before CREATE DATABASE or ALTER DATABASE ... SET TABLESPACE: wait until
 * startup recovery has loaded the fastckpt rows (utility statements do not
 * pass the planner's gate), and refuse a move that would lose rows.
 * Returns whether the statement needs the object access hook.
 */
static bool
fc_prepare_database_stmt(Node *parsetree)
{
	if (RecoveryInProgress())
		return false;			/* PostgreSQL refuses both on a standby */
	if (IsA(parsetree, CreatedbStmt))
	{
		CreatedbStmt *stmt = (CreatedbStmt *) parsetree;
		const char *template = fc_database_option(stmt->options, "template");

		/* recovery first; then only the template's state matters */
		if (!fc_gate_is_open())
			fc_gate_wait_for(psprintf("fastckpt data of database \"%s\"",
									  template ? template : "template1"));
		fc_error_if_database_closed(get_database_oid(template ? template : "template1", true));
		return true;
	}
	if (IsA(parsetree, AlterDatabaseStmt))
	{
		AlterDatabaseStmt *stmt = (AlterDatabaseStmt *) parsetree;
		Oid			dbid = get_database_oid(stmt->dbname, true);

		if (fc_database_option(stmt->options, "tablespace") == NULL ||
			!OidIsValid(dbid))
			return false;		/* PostgreSQL reports what is wrong */
		if (!fc_gate_is_open())
			fc_gate_wait_for(psprintf("fastckpt data of database \"%s\"", stmt->dbname));
		fc_error_if_database_closed(dbid);
		fc_check_move_database(stmt, dbid, fc_database_tablespace(dbid));
		return true;
	}
	return false;
}

/*
 * The new database of a CREATE DATABASE exists (its catalog row is in,
 * its files not yet copied): give its fastckpt tables the template's rows.
 */
static void
fc_copy_template_rows(CreatedbStmt *stmt, Oid dst_db)
{
	const char *template = fc_database_option(stmt->options, "template");
	const char *spcname = fc_database_option(stmt->options, "tablespace");
	Oid			src_db = get_database_oid(template ? template : "template1", false);
	Oid			src_spc = fc_database_tablespace(src_db);
	Oid			dst_spc = spcname ? get_tablespace_oid(spcname, false) : src_spc;

	fc_storage_copy_database(src_db, src_spc, dst_db, dst_spc);
}

/*
 * ALTER DATABASE ... SET TABLESPACE has copied the files and updated the
 * catalog row (not visible to this command yet: the tablespace read here
 * is the old one), holding the database with no session in it.  Check
 * again, then let the storages under the old tablespace go with the
 * commit: they are empty, and the tables get new ones under the new
 * tablespace when next used.
 */
static void
fc_moved_database(AlterDatabaseStmt *stmt, Oid dbid)
{
	Oid			old_spc = fc_database_tablespace(dbid);

	fc_check_move_database(stmt, dbid, old_spc);
	fc_storage_drop_database_in(dbid, old_spc);
}

/*
 * A sequence whose persistence changed keeps its count of values already
 * logged ahead, although no WAL says so for its new file: nextval would
 * then hand out values a crash takes back.  Setting it to its own value
 * resets that count, so the next nextval logs ahead again.
 */
static void
fc_sequence_log_ahead(Oid seqid)
{
	char	   *sql;

	sql = psprintf("SELECT pg_catalog.setval(%u, last_value, is_called) FROM %s",
				   seqid,
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(seqid)),
											  get_rel_name(seqid)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not reset the logged values of sequence %u", seqid);
	SPI_finish();
	pfree(sql);
}

/*
 * The table a CREATE TABLE just made.  Its unqualified name is looked up in
 * the schema it was created in, not along the search path, where a
 * temporary table of the same name would come first.
 */
static Oid
fc_created_relid(RangeVar *relation)
{
	Oid			nspid;

	CommandCounterIncrement();
	if (relation->schemaname == NULL && relation->relpersistence != RELPERSISTENCE_TEMP)
	{
		nspid = RangeVarGetCreationNamespace(relation);
		return get_relname_relid(relation->relname, nspid);
	}
	return RangeVarGetRelid(relation, NoLock, true);
}

/*
 * PostgreSQL gives a table's serial and identity sequences the table's
 * persistence, and fastckpt tables show as unlogged: crash recovery would
 * reset their sequences, which would then hand out again the values the
 * recovered rows hold.  Make them logged, as a heap table's are.
 */
static void
fc_keep_owned_sequences_logged(Oid relid)
{
	List	   *sequences;
	ListCell   *lc;

	if (!fc_relid_is_fastckpt(relid))
		return;
	sequences = getOwnedSequences(relid);
	foreach(lc, sequences)
	{
		Oid			seqid = lfirst_oid(lc);

		if (get_rel_persistence(seqid) == RELPERSISTENCE_UNLOGGED)
		{
			SequenceChangePersistence(seqid, RELPERSISTENCE_PERMANENT);
			fc_sequence_log_ahead(seqid);
		}
	}
	list_free(sequences);
}

/*
 * SET LOGGED made a table's serial and identity sequences logged with
 * PostgreSQL's SequenceChangePersistence(), which keeps the count of
 * values logged ahead (see fc_sequence_log_ahead): reset it.  This is the
 * way back from a fastckpt table (SET ACCESS METHOD heap, SET LOGGED), and
 * plain unlogged tables meet the same.
 */
static void
fc_owned_sequences_log_ahead(Oid relid)
{
	List	   *sequences;
	ListCell   *lc;

	if (!OidIsValid(relid) || get_rel_persistence(relid) != RELPERSISTENCE_PERMANENT)
		return;
	sequences = getOwnedSequences(relid);
	foreach(lc, sequences)
		if (get_rel_persistence(lfirst_oid(lc)) == RELPERSISTENCE_PERMANENT)
			fc_sequence_log_ahead(lfirst_oid(lc));
	list_free(sequences);
}

static void
fc_run_next_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/* The arguments of a utility statement, for fc_prepared_finish to run. */
typedef struct FcUtilityCall
{
	PlannedStmt *pstmt;
	const char *queryString;
	bool		readOnlyTree;
	ProcessUtilityContext context;
	ParamListInfo params;
	QueryEnvironment *queryEnv;
	DestReceiver *dest;
	QueryCompletion *qc;
} FcUtilityCall;

static void
fc_run_utility_call(void *arg)
{
	FcUtilityCall *c = (FcUtilityCall *) arg;

	fc_run_next_utility(c->pstmt, c->queryString, c->readOnlyTree, c->context,
						c->params, c->queryEnv, c->dest, c->qc);
}

/*
 * Run the statement.  COMMIT and ROLLBACK PREPARED do pg_fastckpt's part
 * of two-phase commit around PostgreSQL's (txn/prepared.c), after
 * catalog_watch.c took any checkpoint they need first: a COMMIT PREPARED
 * holds its CSN from its log record on, which that checkpoint would wait
 * for.
 */
static void
fc_run_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			   ProcessUtilityContext context, ParamListInfo params,
			   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	TransactionStmt *ts = IsA(pstmt->utilityStmt, TransactionStmt) ?
		(TransactionStmt *) pstmt->utilityStmt : NULL;

	if (ts != NULL && (ts->kind == TRANS_STMT_COMMIT_PREPARED ||
					   ts->kind == TRANS_STMT_ROLLBACK_PREPARED))
	{
		FcUtilityCall call = {pstmt, queryString, readOnlyTree, context,
		params, queryEnv, dest, qc};

		fc_prepared_finish(ts->gid, ts->kind == TRANS_STMT_COMMIT_PREPARED,
						   fc_run_utility_call, &call);
	}
	else
		fc_run_next_utility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
}

/*
 * ALTER TABLE ... ADD COLUMN or ALTER COLUMN ... TYPE without a rewrite
 * (varchar(10) to varchar(100), a nullable column) leaves a fastckpt
 * table's slots sized for the old columns, and rows the new ones allow
 * would be refused as too big.  So the row size the columns need is taken
 * before and after, and a table whose need grew is rewritten (as VACUUM
 * FULL does) with slots grown by that much, as a heap table takes such
 * rows at once.  Grown by the difference, not sized afresh: a table sized
 * with pg_fastckpt.bytes_per_char keeps what that saved.
 */
typedef struct FcRowNeed
{
	Oid			relid;
	uint32		before;			/* what the columns needed (no row size floor) */
	uint32		have;			/* the slots' row image bytes before the ALTER */
	uint32		before_cap;		/* fc_row_image_capacity before the ALTER */
	int			natts;			/* attributes before the ALTER */
} FcRowNeed;

/* the needs of the ALTER TABLE running, for its own rewrites (ddl.c) */
static const FcRowNeed *fc_running_needs = NULL;
static int	fc_running_nneeds = 0;

/*
 * Row image bytes a rewrite of relid under the running ALTER TABLE needs:
 * the slots it had, grown by what its new columns (newrel's) need more, or
 * 0 if the ALTER noted nothing for it.
 */
uint32
fc_alter_row_target(Oid relid, Relation newrel)
{
	for (int i = 0; i < fc_running_nneeds; i++)
	{
		uint32		after;

		if (fc_running_needs[i].relid != relid)
			continue;
		after = fc_row_image_need(newrel);
		if (after <= fc_running_needs[i].before)
			return fc_running_needs[i].have;
		else
		{
			/* as fc_resize_slots_after_alter: the longest row must fit too */
			Relation	old = table_open(relid, NoLock);
			uint32		grow = (after - fc_running_needs[i].before) +
				MAXIMUM_ALIGNOF * (1 + Max(RelationGetNumberOfAttributes(newrel) - fc_running_needs[i].natts, 0));
			uint32		longest = fc_table_max_live_len(fc_table_for_rel(old));

			table_close(old, NoLock);
			return Min(MAXALIGN(Max(fc_running_needs[i].have + (after - fc_running_needs[i].before),
									longest + grow)),
					   FC_MAX_IMAGE_CAPACITY);
		}
	}
	return 0;
}

static bool
fc_alter_widens(AlterTableStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);

		if (cmd->subtype == AT_AddColumn || cmd->subtype == AT_AlterColumnType)
			return true;
		if (cmd->subtype == AT_SetRelOptions || cmd->subtype == AT_ResetRelOptions)
		{
			List	   *defs = list_copy((List *) cmd->def);
			FcSizingOptions opts;

			/* fastckpt_row_size or fastckpt_bytes_per_char may grow the slots */
			fc_sizing_options_init(&opts);
			if (fc_take_sizing_options(&defs, cmd->subtype == AT_ResetRelOptions, &opts))
				return true;
		}
	}
	return false;
}

/*
 * The tables of a composite type (CREATE TABLE ... OF type), locked as
 * ALTER TYPE ... CASCADE will lock them.
 */
static List *
fc_typed_tables(Oid typid, LOCKMODE lockmode)
{
	Relation	classrel = table_open(RelationRelationId, AccessShareLock);
	ScanKeyData key;
	TableScanDesc scan;
	HeapTuple	tuple;
	List	   *rels = NIL;
	ListCell   *lc;

	ScanKeyInit(&key, Anum_pg_class_reloftype, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(typid));
	scan = table_beginscan_catalog(classrel, 1, &key);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
		rels = lappend_oid(rels, ((Form_pg_class) GETSTRUCT(tuple))->oid);
	table_endscan(scan);
	table_close(classrel, AccessShareLock);
	foreach(lc, rels)
		LockRelationOid(lfirst_oid(lc), lockmode);
	return rels;
}

/*
 * Before the ALTER: lock as it will, and note what the columns of its
 * fastckpt tables need (an array in the statement's memory, *nneeds long).
 */
static FcRowNeed *
fc_note_row_needs(AlterTableStmt *stmt, int *nneeds)
{
	LOCKMODE	lockmode;
	Oid			relid;
	List	   *rels;
	ListCell   *lc;
	FcRowNeed  *needs;

	*nneeds = 0;
	if ((stmt->objtype != OBJECT_TABLE && stmt->objtype != OBJECT_TYPE) ||
		!fc_alter_widens(stmt))
		return NULL;
	lockmode = AlterTableGetLockLevel(stmt->cmds);
	relid = AlterTableLookupRelation(stmt, lockmode);
	if (!OidIsValid(relid))
		return NULL;			/* IF EXISTS, and it does not */
	if (stmt->objtype == OBJECT_TYPE)
	{
		/* CASCADE: the typed tables, and their partitions (h37 F2) */
		rels = NIL;
		foreach(lc, fc_typed_tables(get_rel_type_id(relid), lockmode))
			rels = list_concat_unique_oid(rels,
										  find_all_inheritors(lfirst_oid(lc), lockmode, NULL));
	}
	else
		rels = stmt->relation->inh ? find_all_inheritors(relid, lockmode, NULL) :
			list_make1_oid(relid);
	needs = palloc(list_length(rels) * sizeof(FcRowNeed));
	foreach(lc, rels)
	{
		Relation	rel;

		if (!fc_relid_is_fastckpt(lfirst_oid(lc)))
			continue;
		rel = table_open(lfirst_oid(lc), NoLock);
		needs[*nneeds].relid = RelationGetRelid(rel);
		needs[*nneeds].before = fc_row_image_need(rel);
		needs[*nneeds].have = fc_table_for_rel(rel)->layout.image_capacity;
		needs[*nneeds].before_cap = fc_row_image_capacity(rel, NULL);
		needs[*nneeds].natts = RelationGetNumberOfAttributes(rel);
		(*nneeds)++;
		table_close(rel, NoLock);
	}
	list_free(rels);
	return needs;
}

/* After it: rewrite the tables whose columns need more room now. */
static void
fc_resize_slots_after_alter(const FcRowNeed *needs, int nneeds)
{
	for (int i = 0; i < nneeds; i++)
	{
		Relation	rel = try_table_open(needs[i].relid, NoLock);
		uint32		after;
		uint32		after_cap;
		uint32		have;
		uint32		target;

		if (rel == NULL)
			continue;
		if (rel->rd_tableam != fc_table_am_routine())
		{
			table_close(rel, NoLock);	/* the ALTER made it heap */
			continue;
		}
		after = fc_row_image_need(rel);
		after_cap = fc_row_image_capacity(rel, NULL);
		have = fc_table_for_rel(rel)->layout.image_capacity;
		table_close(rel, NoLock);
		target = 0;
		if (after_cap > needs[i].before_cap)	/* sizing parameters, bounded columns */
			target = needs[i].have + (after_cap - needs[i].before_cap);
		if (after > needs[i].before && target <= have)
		{
			/*
			 * New columns beside unbounded ones, which the row size floor
			 * hides: the rows already there must still fit once an UPDATE
			 * stores them with the new columns (one alignment pad each, and
			 * a longer null bitmap).  Rewrite only if the longest does not.
			 */
			uint32		grow = (after - needs[i].before) +
				MAXIMUM_ALIGNOF * (1 + Max(RelationGetNumberOfAttributes(rel) - needs[i].natts, 0));
			uint32		longest;

			rel = table_open(needs[i].relid, NoLock);
			longest = fc_table_max_live_len(fc_table_for_rel(rel));
			table_close(rel, NoLock);
			if (longest + grow > have)
				target = Max(target, Max(needs[i].have + (after - needs[i].before), longest + grow));
		}
		target = Min(MAXALIGN(target), FC_MAX_IMAGE_CAPACITY);
		if (target <= have)
			continue;			/* no more room needed, or the ALTER's own rewrite gave it */
		PG_TRY();
		{
			ClusterParams params = {0};

			fc_resize_capacity = target;
			cluster_rel(needs[i].relid, InvalidOid, &params);
		}
		PG_FINALLY();
		{
			fc_resize_capacity = 0;
		}
		PG_END_TRY();
		CommandCounterIncrement();
	}
}

/*
 * Statements that may take locks on relations stronger than a writer's
 * (DROP, TRUNCATE, ALTER, CREATE INDEX or TRIGGER, LOCK, VACUUM ...), or
 * whose commit waits at the gate: all but the ones listed, which lock
 * nothing or reach the gate through the planner as queries do.  See
 * fc_gate_wait_quietly.
 */
static bool
fc_statement_may_lock_strongly(Node *parsetree)
{
	switch (nodeTag(parsetree))
	{
		case T_TransactionStmt:
		case T_VariableSetStmt:
		case T_VariableShowStmt:
		case T_DiscardStmt:
		case T_PrepareStmt:
		case T_ExecuteStmt:
		case T_DeallocateStmt:
		case T_ListenStmt:
		case T_NotifyStmt:
		case T_UnlistenStmt:
		case T_CheckPointStmt:
		case T_LoadStmt:
		case T_ExplainStmt:
		case T_CallStmt:
		case T_DoStmt:
		case T_CopyStmt:
		case T_DeclareCursorStmt:
		case T_FetchStmt:
		case T_ClosePortalStmt:
		case T_ConstraintsSetStmt:
			/* none stronger than ShareUpdateExclusiveLock on a table */
		case T_CreatePublicationStmt:
		case T_AlterPublicationStmt:
		case T_CreateSubscriptionStmt:
		case T_AlterSubscriptionStmt:
		case T_DropSubscriptionStmt:
			return false;
		case T_DropStmt:
			return ((DropStmt *) parsetree)->removeType != OBJECT_PUBLICATION;
		default:
			return true;
	}
}

/*
 * Does CREATE TABLE ... AS (or SELECT INTO) make a fastckpt table that has
 * to be made unlogged?  A materialized view cannot be one: refused here.
 */
static bool
fc_ctas_needs_unlogged(CreateTableAsStmt *stmt)
{
	if (!fc_is_fastckpt_name(stmt->into->accessMethod))
		return false;
	if (stmt->objtype == OBJECT_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialized views cannot use the fastckpt access method"),
				 errdetail("fastckpt tables must be unlogged, and PostgreSQL does not allow unlogged materialized views."),
				 stmt->into->accessMethod == NULL ?
				 errhint("default_table_access_method is fastckpt here: add USING heap to CREATE MATERIALIZED VIEW.") :
				 errhint("Create a fastckpt table with CREATE TABLE ... USING fastckpt AS ... instead.")));
	return stmt->into->rel->relpersistence == RELPERSISTENCE_PERMANENT;
}

/* The utility hook proper, once catalog_watch.c has seen the statement. */
static void
fc_process_utility_watched(PlannedStmt *pstmt, const char *queryString,
						   bool readOnlyTree, ProcessUtilityContext context,
						   ParamListInfo params, QueryEnvironment *queryEnv,
						   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	FcRowNeed  *row_needs = NULL;
	int			nrow_needs = 0;
	FcSizingChange sizing = {0};
	Oid			created = InvalidOid;
	bool		set_logged = false;

#define FC_WRITABLE_TREE() \
	do { \
		if (readOnlyTree) \
		{ \
			pstmt = copyObject(pstmt); \
			parsetree = pstmt->utilityStmt; \
			readOnlyTree = false; \
		} \
	} while (0)

	switch (nodeTag(parsetree))
	{
		case T_CreateStmt:
			{
				CreateStmt *stmt;

				FC_WRITABLE_TREE();
				stmt = (CreateStmt *) parsetree;
				if (stmt->partspec == NULL && fc_is_fastckpt_name(stmt->accessMethod) &&
					stmt->relation->relpersistence == RELPERSISTENCE_PERMANENT)
					stmt->relation->relpersistence = RELPERSISTENCE_UNLOGGED;
				if (stmt->partspec == NULL)
					fc_sizing_before_create(&stmt->options, stmt->relation, &sizing);
				break;
			}
		case T_CreateTableAsStmt:
			{
				CreateTableAsStmt *stmt;

				FC_WRITABLE_TREE();
				stmt = (CreateTableAsStmt *) parsetree;
				if (fc_ctas_needs_unlogged(stmt))
					stmt->into->rel->relpersistence = RELPERSISTENCE_UNLOGGED;
				if (stmt->objtype == OBJECT_TABLE)
					fc_sizing_before_create(&stmt->into->options, stmt->into->rel, &sizing);
				break;
			}
		case T_ExplainStmt:
			{
				/* EXPLAIN ANALYZE CREATE TABLE ... AS creates the table too */
				Query	   *query = (Query *) ((ExplainStmt *) parsetree)->query;

				if (IsA(query, Query) && query->commandType == CMD_UTILITY &&
					IsA(query->utilityStmt, CreateTableAsStmt) &&
					fc_ctas_needs_unlogged((CreateTableAsStmt *) query->utilityStmt))
				{
					FC_WRITABLE_TREE();
					query = (Query *) ((ExplainStmt *) parsetree)->query;
					((CreateTableAsStmt *) query->utilityStmt)->into->rel->relpersistence =
						RELPERSISTENCE_UNLOGGED;
				}
				break;
			}
		case T_AlterTableStmt:
			{
				bool		add_unlogged;

				fc_check_alter_table((AlterTableStmt *) parsetree, &add_unlogged, &set_logged);
				row_needs = fc_note_row_needs((AlterTableStmt *) parsetree, &nrow_needs);
				FC_WRITABLE_TREE();
				fc_sizing_before_alter((AlterTableStmt *) parsetree, &sizing);
				if (add_unlogged)
				{
					AlterTableCmd *cmd = makeNode(AlterTableCmd);

					cmd->subtype = AT_SetUnLogged;
					((AlterTableStmt *) parsetree)->cmds =
						lappend(((AlterTableStmt *) parsetree)->cmds, cmd);
				}
				break;
			}
		default:
			break;
	}

	{
		bool		database_stmt = fc_prepare_database_stmt(parsetree);
		bool		outer_alter = fc_alter_table_running;
		const FcSizingOptions *outer_sizing = fc_statement_sizing;
		const FcRowNeed *outer_needs = fc_running_needs;
		int			outer_nneeds = fc_running_nneeds;

		PG_TRY();
		{
			if (database_stmt)
				fc_database_stmt = parsetree;
			if (IsA(parsetree, AlterTableStmt))
			{
				fc_alter_table_running = true;
				fc_running_needs = row_needs;
				fc_running_nneeds = nrow_needs;
			}
			if (sizing.given && !IsA(parsetree, AlterTableStmt))
				fc_statement_sizing = &sizing.change;
			fc_run_utility(pstmt, queryString, readOnlyTree, context, params,
						   queryEnv, dest, qc);
		}
		PG_FINALLY();
		{
			if (database_stmt)
				fc_database_stmt = NULL;
			fc_alter_table_running = outer_alter;
			fc_running_needs = outer_needs;
			fc_running_nneeds = outer_nneeds;
			fc_statement_sizing = outer_sizing;
		}
		PG_END_TRY();
	}

	if (IsA(parsetree, CreateStmt))
	{
		created = fc_created_relid(((CreateStmt *) parsetree)->relation);
		fc_keep_owned_sequences_logged(created);
	}
	else if (IsA(parsetree, CreateTableAsStmt) && sizing.active)
		created = fc_created_relid(((CreateTableAsStmt *) parsetree)->into->rel);
	fc_sizing_after(parsetree, created, &sizing);
	if (IsA(parsetree, AlterTableStmt) &&
		((AlterTableStmt *) parsetree)->objtype == OBJECT_TYPE)
	{
		CommandCounterIncrement();
		fc_resize_slots_after_alter(row_needs, nrow_needs);
	}
	else if (IsA(parsetree, AlterTableStmt) &&
			 ((AlterTableStmt *) parsetree)->objtype == OBJECT_TABLE)
	{
		Oid			relid = RangeVarGetRelid(((AlterTableStmt *) parsetree)->relation,
											 NoLock, true);

		CommandCounterIncrement();
		fc_keep_owned_sequences_logged(relid);
		if (set_logged)
			fc_owned_sequences_log_ahead(relid);
		fc_resize_slots_after_alter(row_needs, nrow_needs);
	}
}

static void
fc_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				   ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest,
				   QueryCompletion *qc)
{
	bool		strong = fc_statement_may_lock_strongly(pstmt->utilityStmt);

	/* the gid of a two-phase commit's PREPARE (txn/prepared.c) */
	if (IsA(pstmt->utilityStmt, TransactionStmt) &&
		((TransactionStmt *) pstmt->utilityStmt)->kind == TRANS_STMT_PREPARE)
		fc_prepared_note_gid(((TransactionStmt *) pstmt->utilityStmt)->gid);

	if (strong)
		fc_gate_wait_quietly();

	/*
	 * In a database whose tables recovery left closed, a concurrent build
	 * would commit its index and then meet the closed gate, leaving an
	 * invalid index that replay would then run with: refuse it first.
	 */
	if (IsA(pstmt->utilityStmt, IndexStmt) &&
		((IndexStmt *) pstmt->utilityStmt)->concurrent &&
		fc_gate_is_open() && !fc_gate_passes())
	{
		RangeVar   *rv = ((IndexStmt *) pstmt->utilityStmt)->relation;
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (OidIsValid(relid) && fc_relid_is_fastckpt(relid))
			fc_gate_wait_for(psprintf("fastckpt table \"%s\"", rv->relname));
	}
	/* ... and a COMMIT PREPARED of ours says so, not what the watch would */
	if (IsA(pstmt->utilityStmt, TransactionStmt) &&
		((TransactionStmt *) pstmt->utilityStmt)->kind == TRANS_STMT_COMMIT_PREPARED &&
		fc_gate_is_open() && !fc_gate_passes())
		(void) fc_prepared_wait_for_tables(((TransactionStmt *) pstmt->utilityStmt)->gid, true);
	if (fc_catalog_watch_statement(pstmt->utilityStmt))
	{
		/* its changes commit inside it: watched until it returns */
		PG_TRY();
		{
			fc_process_utility_watched(pstmt, queryString, readOnlyTree, context,
									   params, queryEnv, dest, qc);
		}
		PG_CATCH();
		{
			fc_catalog_watch_statement_end(pstmt->utilityStmt, false);
			PG_RE_THROW();
		}
		PG_END_TRY();
		fc_catalog_watch_statement_end(pstmt->utilityStmt, true);
	}
	else
		fc_process_utility_watched(pstmt, queryString, readOnlyTree, context,
								   params, queryEnv, dest, qc);
	if (strong)
		fc_gate_check_held_locks();
}

static bool
fc_is_fastckpt_table(Oid relid)
{
	Oid			amoid = get_table_am_oid(FASTCKPT_AM_NAME, true);
	HeapTuple	tup;
	bool		result = false;

	if (!OidIsValid(amoid))
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);

		result = (cls->relam == amoid && cls->relkind == RELKIND_RELATION);
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * Free the storage of dropped fastckpt tables (and databases) at commit;
 * a dropped registered routine leaves the registry with the same commit.
 */
static void
fc_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
				 void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);

	/*
	 * A registered routine replaced, altered or dropped, or a fastckpt
	 * table altered or dropped: logged calls must not be replayed against
	 * the new definitions (see fc_commit_checkpoint_for_calls).
	 */
	if ((access == OAT_POST_CREATE || access == OAT_POST_ALTER || access == OAT_DROP) &&
		((classId == ProcedureRelationId && subId == 0 &&
		  fc_proc_is_registered(objectId, NULL)) ||
		 (classId == RelationRelationId && access != OAT_POST_CREATE &&
		  fc_is_fastckpt_table(objectId))))
		fc_commit_require_checkpoint();
	if (classId == DatabaseRelationId && fc_database_stmt != NULL)
	{
		Node	   *stmt = fc_database_stmt;

		if (access == OAT_POST_CREATE && IsA(stmt, CreatedbStmt))
		{
			fc_database_stmt = NULL;
			fc_copy_template_rows((CreatedbStmt *) stmt, objectId);
		}
		else if (access == OAT_POST_ALTER && IsA(stmt, AlterDatabaseStmt))
		{
			fc_database_stmt = NULL;
			fc_moved_database((AlterDatabaseStmt *) stmt, objectId);
		}
	}
	if (access != OAT_DROP)
		return;

	if (classId == RelationRelationId && subId == 0)
	{
		Oid			amoid = get_table_am_oid(FASTCKPT_AM_NAME, true);
		HeapTuple	tup;

		if (!OidIsValid(amoid))
			return;
		tup = SearchSysCache1(RELOID, ObjectIdGetDatum(objectId));
		if (HeapTupleIsValid(tup))
		{
			Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);

			if (cls->relam == amoid && cls->relkind == RELKIND_RELATION)
			{
				RelFileNode rnode;

				rnode.spcNode = OidIsValid(cls->reltablespace) ?
					cls->reltablespace : MyDatabaseTableSpace;
				rnode.dbNode = MyDatabaseId;
				rnode.relNode = cls->relfilenode;
				fc_pending_drop_table(&rnode,
									  cls->relpersistence == RELPERSISTENCE_TEMP);
			}
			ReleaseSysCache(tup);
		}
	}
	else if (classId == DatabaseRelationId)
		fc_pending_drop_database(objectId);
	else if (classId == ProcedureRelationId && subId == 0)
		fc_proc_dropped(objectId);
}

void
fc_register_utility_hook(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = fc_process_utility;
}

void
fc_register_object_access_hook(void)
{
	prev_object_access = object_access_hook;
	object_access_hook = fc_object_access;
}
