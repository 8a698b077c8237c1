/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  Which routines are registered for call logging, and what became of
 *	  their calls.
 *
 * The registry is an ordinary table of the extension,
 * fastckpt_procedure_registry, one per database: it is transactional,
 * survives restarts through PostgreSQL's WAL and is dumped by pg_dump.
 * Each backend keeps the set of registered OIDs in a hash table that
 * fastckpt_register_procedure / _unregister_procedure invalidate through
 * a relcache invalidation of the registry table.  Alongside each routine
 * the registry keeps the version of its pg_proc row at registration and a
 * fingerprint of its definition (routine_fingerprint.c): a routine whose
 * definition changed since (CREATE OR REPLACE, ALTER ... SET) is not
 * trusted until registered again, but one recreated unchanged, as a
 * restore of a pg_dump does, is.
 *
 * Counters per routine live in a shared hash table keyed by database and
 * routine; they are statistics, lost at restart like pg_stat_statements'.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "procs/procs.h"
#include "store/slot.h"

#define FC_REGISTRY_TABLE	"fastckpt_procedure_registry"
#define FC_MAX_PROC_STATS	1024

const char *const fc_fallback_names[FC_FALLBACK_NREASONS] = {
	"none",
	"writes_outside_call",
	"non_fastckpt_relation",
	"nondeterministic",
	"read_conflict",
	"redefined",
	"transaction_control",
	"arguments",
	"catalog_changed",
	"prepared"
};

typedef struct FcProcStatsKey
{
	Oid			dbid;
	Oid			funcid;
} FcProcStatsKey;

/*
 * Committed calls that wrote fastckpt rows, by how they were logged:
 * [FC_FALLBACK_NONE] passed every check and became one CALL record, the
 * others fell back to row images for that reason.  Atomics, so that a
 * commit of a routine already counted needs the lock only shared.
 */
typedef struct FcProcStats
{
	FcProcStatsKey key;
	pg_atomic_uint64 by_verdict[FC_FALLBACK_NREASONS];
	pg_atomic_uint32 last_fallback;
} FcProcStats;

typedef struct FcProcsShared
{
	pg_atomic_uint64 fallback_totals[FC_FALLBACK_NREASONS];
} FcProcsShared;

static FcProcsShared *fc_procs_shared = NULL;
static HTAB *fc_proc_stats = NULL;

/* this backend's copy of the registry */
typedef enum FcRegistryState
{
	FC_REGISTRY_UNKNOWN,		/* load on next use */
	FC_REGISTRY_ABSENT,			/* no extension here: look again next time */
	FC_REGISTRY_LOADED
} FcRegistryState;

typedef struct FcRegistered
{
	Oid			funcid;
	TransactionId definition;	/* pg_proc row version at registration */
	bool		has_fingerprint;
	char		fingerprint[FC_FINGERPRINT_LEN + 1];
	/*
	 * The pg_proc row last compared with the fingerprint, by xmin and place
	 * (one transaction may change the routine twice), and whether its
	 * definition matched.
	 */
	TransactionId compared;
	ItemPointerData compared_tid;
	bool		same;
} FcRegistered;

static FcRegistryState fc_registry_state = FC_REGISTRY_UNKNOWN;
static Oid	fc_registry_relid = InvalidOid;
static HTAB *fc_registered = NULL;
static Oid	fc_txn_time_oid = InvalidOid;
static Oid	fc_random_oid = InvalidOid;
static uint64 fc_registry_loads = 0;	/* versions this backend has read */

PG_FUNCTION_INFO_V1(fastckpt_register_procedure);
PG_FUNCTION_INFO_V1(fastckpt_unregister_procedure);
PG_FUNCTION_INFO_V1(fastckpt_procedure_stats_internal);

Size
fc_procs_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(FcProcsShared)),
					hash_estimate_size(FC_MAX_PROC_STATS, sizeof(FcProcStats)));
}

void
fc_procs_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	fc_procs_shared = ShmemInitStruct("pg_fastckpt procedures",
									  sizeof(FcProcsShared), &found);
	if (!found)
		for (int i = 0; i < FC_FALLBACK_NREASONS; i++)
			pg_atomic_init_u64(&fc_procs_shared->fallback_totals[i], 0);

	info.keysize = sizeof(FcProcStatsKey);
	info.entrysize = sizeof(FcProcStats);
	/* fixed: a full table counts no new routine, and takes no lock-table memory */
	fc_proc_stats = ShmemInitHash("pg_fastckpt procedure stats",
								  FC_MAX_PROC_STATS, FC_MAX_PROC_STATS,
								  &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
}

/* Schema of the extension in this database, or InvalidOid. */
static Oid
fc_extension_schema(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("pg_fastckpt"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

static void
fc_registry_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == fc_registry_relid)
		fc_registry_state = FC_REGISTRY_UNKNOWN;
}

void
fc_procs_register_callbacks(void)
{
	CacheRegisterRelcacheCallback(fc_registry_invalidate, (Datum) 0);
}

static Oid
fc_lookup_helper(Oid nsp, const char *name)
{
	List	   *qualified = list_make2(makeString(get_namespace_name(nsp)),
									   makeString(pstrdup(name)));

	return LookupFuncName(qualified, 0, NULL, true);
}

static void
fc_registry_load(void)
{
	HASHCTL		info;
	Oid			nsp;
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	Snapshot	snapshot;
	AttrNumber	fingerprint_attnum;

	/*
	 * No snapshot of its own can be taken there (a parallel index build's
	 * expression running a query), and a parallel process logs no call.
	 */
	if (IsInParallelMode())
		return;
	if (fc_registered != NULL)
		hash_destroy(fc_registered);
	fc_registered = NULL;
	fc_registry_relid = InvalidOid;
	fc_registry_state = FC_REGISTRY_ABSENT;

	nsp = fc_extension_schema();
	if (!OidIsValid(nsp))
		return;
	fc_registry_relid = get_relname_relid(FC_REGISTRY_TABLE, nsp);
	if (!OidIsValid(fc_registry_relid))
		return;
	fc_txn_time_oid = fc_lookup_helper(nsp, "fastckpt_txn_time");
	fc_random_oid = fc_lookup_helper(nsp, "fastckpt_random");

	info.keysize = sizeof(Oid);
	info.entrysize = sizeof(FcRegistered);
	info.hcxt = TopMemoryContext;
	fc_registered = hash_create("pg_fastckpt registered procedures", 64, &info,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	rel = table_open(fc_registry_relid, AccessShareLock);
	/* by name and type: a registry made by an earlier 1.0 script has none */
	fingerprint_attnum = attnameAttNum(rel, "fingerprint", false);
	if (fingerprint_attnum != InvalidAttrNumber &&
		(fingerprint_attnum <= 0 ||
		 TupleDescAttr(RelationGetDescr(rel), fingerprint_attnum - 1)->atttypid != TEXTOID))
		fingerprint_attnum = InvalidAttrNumber;
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull1,
					isnull2,
					isnull3;
		Datum		funcid = slot_getattr(slot, 1, &isnull1);
		Datum		definition = slot_getattr(slot, 2, &isnull2);
		Datum		fingerprint = (Datum) 0;
		FcRegistered *entry;

		if (isnull1 || isnull2)
			continue;
		isnull3 = true;
		if (fingerprint_attnum != InvalidAttrNumber)
			fingerprint = slot_getattr(slot, fingerprint_attnum, &isnull3);
		entry = hash_search(fc_registered, &funcid, HASH_ENTER, NULL);
		entry->definition = DatumGetTransactionId(definition);
		entry->has_fingerprint = !isnull3;
		if (!isnull3)
			text_to_cstring_buffer(DatumGetTextPP(fingerprint), entry->fingerprint,
								   sizeof(entry->fingerprint));
		entry->compared = InvalidTransactionId;
		ItemPointerSetInvalid(&entry->compared_tid);
		entry->same = false;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	fc_registry_state = FC_REGISTRY_LOADED;
	fc_registry_loads++;
}

/*
 * Which version of the registry this backend has: it changes whenever the
 * registry is read again, so what was concluded from an older one (cached
 * plan verdicts) is known to be stale.
 */
uint64
fc_registry_version(void)
{
	if (fc_registry_state != FC_REGISTRY_LOADED && IsTransactionState())
		fc_registry_load();
	return fc_registry_loads;
}

/*
 * The version of the routine's pg_proc row that registration vouches for:
 * the current one if its definition is the registered one, else
 * InvalidTransactionId, which no row version equals.  Without a
 * fingerprint only the version at registration counts.
 */
static TransactionId
fc_registered_version(FcRegistered *entry)
{
	HeapTuple	tup;
	TransactionId current;
	ItemPointerData current_tid;

	if (!entry->has_fingerprint)
		return entry->definition;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(entry->funcid));
	if (!HeapTupleIsValid(tup))
		return InvalidTransactionId;
	current = HeapTupleHeaderGetRawXmin(tup->t_data);
	current_tid = tup->t_self;
	ReleaseSysCache(tup);
	if (current != entry->compared || !ItemPointerEquals(&current_tid, &entry->compared_tid))
	{
		char		fingerprint[FC_FINGERPRINT_LEN + 1];

		entry->same = fc_routine_fingerprint(entry->funcid, fingerprint) &&
			strcmp(fingerprint, entry->fingerprint) == 0;
		entry->compared = current;
		entry->compared_tid = current_tid;
	}
	return entry->same ? current : InvalidTransactionId;
}

/*
 * Is this routine registered in the current database?  *definition gets
 * the version of its pg_proc row that registration vouches for (see
 * fc_registered_version): a call of any other is not logged as CALL.
 */
bool
fc_proc_is_registered(Oid funcid, TransactionId *definition)
{
	FcRegistered *entry;

	if (!IsTransactionState())
		return false;
	if (fc_registry_state != FC_REGISTRY_LOADED)
		fc_registry_load();
	if (fc_registry_state != FC_REGISTRY_LOADED)
		return false;
	entry = hash_search(fc_registered, &funcid, HASH_FIND, NULL);
	if (entry == NULL)
		return false;
	if (definition)
		*definition = fc_registered_version(entry);
	return true;
}

/* OID of a helper function of the extension in this database. */
Oid
fc_helper_oid(const char *name)
{
	if (fc_registry_state != FC_REGISTRY_LOADED && IsTransactionState())
		fc_registry_load();
	if (fc_registry_state != FC_REGISTRY_LOADED)
		return InvalidOid;
	return strcmp(name, "fastckpt_random") == 0 ? fc_random_oid : fc_txn_time_oid;
}

/* A committed call that wrote fastckpt rows, and how it was logged. */
void
fc_proc_count(Oid funcid, FcFallback verdict)
{
	FcProcStatsKey key;
	FcProcStats *entry;
	bool		found;

	pg_atomic_fetch_add_u64(&fc_procs_shared->fallback_totals[verdict], 1);
	key.dbid = MyDatabaseId;
	key.funcid = funcid;
	LWLockAcquire(fc_misc_lock(FC_LOCK_PROCS), LW_SHARED);
	entry = hash_search(fc_proc_stats, &key, HASH_FIND, NULL);
	if (entry == NULL)
	{
		/* the routine's first count: enter it */
		LWLockRelease(fc_misc_lock(FC_LOCK_PROCS));
		LWLockAcquire(fc_misc_lock(FC_LOCK_PROCS), LW_EXCLUSIVE);
		entry = hash_search(fc_proc_stats, &key, HASH_ENTER_NULL, &found);
		if (entry != NULL && !found)
		{
			for (int i = 0; i < FC_FALLBACK_NREASONS; i++)
				pg_atomic_init_u64(&entry->by_verdict[i], 0);
			pg_atomic_init_u32(&entry->last_fallback, FC_FALLBACK_NONE);
		}
	}
	if (entry != NULL)
	{
		pg_atomic_fetch_add_u64(&entry->by_verdict[verdict], 1);
		if (verdict != FC_FALLBACK_NONE)
			pg_atomic_write_u32(&entry->last_fallback, verdict);
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_PROCS));
}

void
fc_procs_fallback_totals(uint64 *totals)
{
	for (int i = 0; i < FC_FALLBACK_NREASONS; i++)
		totals[i] = pg_atomic_read_u64(&fc_procs_shared->fallback_totals[i]);
}

void
fc_procs_stats_reset(void)
{
	HASH_SEQ_STATUS seq;
	FcProcStats *entry;

	for (int i = 0; i < FC_FALLBACK_NREASONS; i++)
		pg_atomic_write_u64(&fc_procs_shared->fallback_totals[i], 0);
	LWLockAcquire(fc_misc_lock(FC_LOCK_PROCS), LW_EXCLUSIVE);
	hash_seq_init(&seq, fc_proc_stats);
	while ((entry = hash_seq_search(&seq)) != NULL)
		hash_search(fc_proc_stats, &entry->key, HASH_REMOVE, NULL);
	LWLockRelease(fc_misc_lock(FC_LOCK_PROCS));
}

/* Counts by reason as a jsonb object, reasons with no count left out. */
Datum
fc_fallbacks_jsonb(const uint64 *counts)
{
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = FC_FALLBACK_NONE + 1; i < FC_FALLBACK_NREASONS; i++)
	{
		if (counts[i] == 0)
			continue;
		appendStringInfo(&buf, "%s\"%s\": " UINT64_FORMAT,
						 first ? "" : ", ", fc_fallback_names[i], counts[i]);
		first = false;
	}
	appendStringInfoChar(&buf, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * Check that a routine can be registered, and return the version of its
 * pg_proc row; fingerprint gets the digest of its definition.
 */
static TransactionId
fc_check_registrable(Oid funcid, char *fingerprint)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	char	   *lang;
	TransactionId definition;
	char	   *name = format_procedure(funcid);

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", funcid)));
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (!pg_proc_ownercheck(funcid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   proc->prokind == PROKIND_PROCEDURE ? OBJECT_PROCEDURE : OBJECT_FUNCTION,
					   NameStr(proc->proname));
	if (proc->prokind == PROKIND_AGGREGATE || proc->prokind == PROKIND_WINDOW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot register %s for call logging: it is an aggregate or window function", name),
				 errhint("Register a plain function or a procedure.")));
	if (proc->prorettype == TRIGGEROID || proc->prorettype == EVENT_TRIGGEROID)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot register %s for call logging: it is a trigger function", name),
				 errdetail("Only a client's top-level call of a registered routine is logged as a call; a trigger function is never called so."),
				 errhint("Register a plain function or a procedure.")));
	if (proc->proretset)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register %s for call logging: it returns a set", name),
				 errhint("Register a function that returns a single value, or a procedure.")));
	lang = get_language_name(proc->prolang, false);
	if (strcmp(lang, "sql") != 0 && strcmp(lang, "plpgsql") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register %s for call logging: it is written in %s", name, lang),
				 errdetail("pg_fastckpt can only check that replaying a call repeats its writes for LANGUAGE sql and plpgsql routines."),
				 errhint("Write the routine in SQL or PL/pgSQL, or leave it unregistered: its transactions are then logged as row images.")));
	definition = HeapTupleHeaderGetRawXmin(tup->t_data);
	ReleaseSysCache(tup);
	if (!fc_routine_fingerprint(funcid, fingerprint))
		elog(ERROR, "cache lookup failed for function %u", funcid);
	return definition;
}

/*
 * Run a statement on the registry as the bootstrap superuser: the table
 * is not writable by users, and the owner check happened before.
 */
static uint64
fc_registry_execute(const char *sql, int nargs, Oid *types, Datum *values)
{
	Oid			save_userid;
	int			save_sec;
	Oid			nsp = fc_extension_schema();
	char	   *query;
	uint64		processed;

	if (!OidIsValid(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"pg_fastckpt\" is not installed in this database")));
	query = psprintf(sql, quote_identifier(get_namespace_name(nsp)));
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute_with_args(query, nargs, types, values, NULL, false, 0) < 0)
			elog(ERROR, "could not update %s", FC_REGISTRY_TABLE);
		processed = SPI_processed;
		SPI_finish();
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
	}
	PG_END_TRY();

	fc_registry_relid = get_relname_relid(FC_REGISTRY_TABLE, nsp);
	CacheInvalidateRelcacheByRelid(fc_registry_relid);
	return processed;
}

Datum
fastckpt_register_procedure(PG_FUNCTION_ARGS)
{
	Oid			funcid = PG_GETARG_OID(0);
	Oid			types[4] = {REGPROCEDUREOID, XIDOID, TEXTOID, OIDOID};
	Datum		values[4];
	char		fingerprint[FC_FINGERPRINT_LEN + 1];

	values[0] = ObjectIdGetDatum(funcid);
	values[1] = TransactionIdGetDatum(fc_check_registrable(funcid, fingerprint));
	values[2] = CStringGetTextDatum(fingerprint);
	values[3] = ObjectIdGetDatum(GetUserId());
	(void) fc_registry_execute("INSERT INTO %s." FC_REGISTRY_TABLE
							   " AS r (routine, definition, fingerprint, registered_by)"
							   " VALUES ($1, $2, $3, $4)"
							   " ON CONFLICT (routine) DO UPDATE"
							   " SET definition = EXCLUDED.definition,"
							   " fingerprint = EXCLUDED.fingerprint,"
							   " registered_by = EXCLUDED.registered_by,"
							   " registered_at = pg_catalog.now()",
							   4, types, values);
	PG_RETURN_VOID();
}

Datum
fastckpt_unregister_procedure(PG_FUNCTION_ARGS)
{
	Oid			funcid = PG_GETARG_OID(0);
	Oid			types[1] = {REGPROCEDUREOID};
	Datum		values[1];
	uint64		removed;

	if (SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(funcid)) &&
		!pg_proc_ownercheck(funcid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_FUNCTION, get_func_name(funcid));
	values[0] = ObjectIdGetDatum(funcid);
	removed = fc_registry_execute("DELETE FROM %s." FC_REGISTRY_TABLE
								  " WHERE routine OPERATOR(pg_catalog.=) $1",
								  1, types, values);
	if (removed == 0)
		ereport(NOTICE,
				(errmsg("%s was not registered", format_procedure(funcid))));
	PG_RETURN_BOOL(removed > 0);
}

/*
 * Forget the counters of a dropped routine of this database, or (funcid
 * invalid) of every routine of a dropped database: else routines created
 * and dropped in turn fill the table for good.  (A DROP FUNCTION that
 * rolls back loses the routine's counters: they are statistics.)
 */
void
fc_procs_forget(Oid dbid, Oid funcid)
{
	HASH_SEQ_STATUS seq;
	FcProcStats *entry;

	LWLockAcquire(fc_misc_lock(FC_LOCK_PROCS), LW_EXCLUSIVE);
	if (OidIsValid(funcid))
	{
		FcProcStatsKey key;

		key.dbid = dbid;
		key.funcid = funcid;
		(void) hash_search(fc_proc_stats, &key, HASH_REMOVE, NULL);
	}
	else
	{
		hash_seq_init(&seq, fc_proc_stats);
		while ((entry = hash_seq_search(&seq)) != NULL)
			if (entry->key.dbid == dbid)
				(void) hash_search(fc_proc_stats, &entry->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_PROCS));
}

/* A registered routine is being dropped: it leaves the registry with it. */
void
fc_proc_dropped(Oid funcid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];

	fc_procs_forget(MyDatabaseId, funcid);
	if (!fc_proc_is_registered(funcid, NULL))
		return;
	values[0] = ObjectIdGetDatum(funcid);
	(void) fc_registry_execute("DELETE FROM %s." FC_REGISTRY_TABLE
							   " WHERE routine::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
							   1, types, values);
}

/* Counters of the current database's routines, for fastckpt_procedures. */
Datum
fastckpt_procedure_stats_internal(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS seq;
	FcProcStats *entry;
	struct
	{
		Oid			funcid;
		uint64		by_verdict[FC_FALLBACK_NREASONS];
		uint32		last_fallback;
	}		   *copies;
	int			ncopies = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != 7)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL definition of fastckpt_procedures does not match the loaded pg_fastckpt library"),
				 errhint("Install the library and the extension script of the same release.")));

	/* copy out under the lock; build the rows after */
	copies = palloc(sizeof(*copies) * FC_MAX_PROC_STATS);
	LWLockAcquire(fc_misc_lock(FC_LOCK_PROCS), LW_SHARED);
	hash_seq_init(&seq, fc_proc_stats);
	while ((entry = hash_seq_search(&seq)) != NULL)
	{
		if (entry->key.dbid != MyDatabaseId || ncopies >= FC_MAX_PROC_STATS)
			continue;
		copies[ncopies].funcid = entry->key.funcid;
		for (int i = 0; i < FC_FALLBACK_NREASONS; i++)
			copies[ncopies].by_verdict[i] = pg_atomic_read_u64(&entry->by_verdict[i]);
		copies[ncopies].last_fallback = pg_atomic_read_u32(&entry->last_fallback);
		ncopies++;
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_PROCS));

	for (int i = 0; i < ncopies; i++)
	{
		Datum		values[7];
		bool		nulls[7] = {0};
		uint64		calls = 0;
		uint64		as_call = copies[i].by_verdict[FC_FALLBACK_NONE];

		for (int v = 0; v < FC_FALLBACK_NREASONS; v++)
			calls += copies[i].by_verdict[v];
		values[0] = ObjectIdGetDatum(copies[i].funcid);
		values[1] = Int64GetDatum((int64) calls);
		/* a call that passed every check is always one CALL record */
		values[2] = Int64GetDatum((int64) as_call);
		values[3] = Int64GetDatum((int64) as_call);
		values[4] = Int64GetDatum((int64) (calls - as_call));
		values[5] = fc_fallbacks_jsonb(copies[i].by_verdict);
		if (copies[i].last_fallback == FC_FALLBACK_NONE)
			nulls[6] = true;
		else
			values[6] = CStringGetTextDatum(fc_fallback_names[copies[i].last_fallback]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
