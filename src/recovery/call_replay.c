/*-------------------------------------------------------------------------
 *
 * call_replay.c
 *	  Serial replay of a database's log records from its first CALL record
 *	  on (DESIGN.md section 8).
 *
 * A CALL record holds the call, not its row images, so the call must run
 * again, seeing exactly the commits before it: one database-connected
 * worker per database takes that database's VALUES and CALL records in CSN
 * order, after the leader applied everything before the first call in
 * parallel and the database's indexes were rebuilt (calls use them).
 *
 * VALUES records are applied as in the parallel pass, and index entries
 * are added for rows that land in empty slots.  A CALL record runs its
 * routine as the role that called it, with the logged arguments,
 * search_path, transaction time and random seed; its inserts take the
 * slots the call was given (later records name those slots).  At its
 * commit the final images of what it wrote are digested and compared with
 * the digest the call logged: a call that did not repeat exactly stops
 * recovery with the reason, and the tables stay closed -- never open with
 * something other than what was acknowledged.
 *
 * Index entries are not removed when a replayed record deletes a row, so
 * a slot emptied here keeps entries that would be wrong once the slot is
 * used again.  Such slots are marked; when one is reused, the table's
 * indexes are rebuilt before the next call runs, and at the end.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_proc.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "parser/parse_coerce.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/regproc.h"
#include "utils/relfilenodemap.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/attempts.h"
#include "recovery/call_replay.h"
#include "recovery/gate.h"
#include "recovery/worker_slots.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/write_set.h"

PGDLLEXPORT void fc_call_replay_main(Datum arg);

/* Records applied in one transaction between calls */
#define FC_SERIAL_BATCH		10000

bool		fc_replaying_call = false;
uint64		fc_replayed_digest = 0;
uint32		fc_replayed_nwritten = 0;

/* the running call's slot hints */
static const fc_log_call_slot *fc_hints = NULL;
static uint32 fc_nhints = 0;
static uint32 fc_next_hint = 0;

/* What the leader shares with the worker */
typedef struct FcSerialShared
{
	Oid			dboid;
	uint64		end_lsn;
	uint64		nentries;
	bool		finished;		/* the worker got to the end */
	bool		failed;			/* ... and could not repeat a record */
	bool		terminated;		/* another process sent it SIGTERM */
	FcSerialResult result;
	char		error[1024];
	FcSerialEntry entries[FLEXIBLE_ARRAY_MEMBER];
} FcSerialShared;

/* What the worker knows about a table it touched */
typedef struct FcSerialTable
{
	FcTable    *tbl;			/* hash key */
	bool		stale;			/* has slots with leftover index entries */
	bool		needs_rebuild;	/* ... and one of them holds a row again */
	/* open in the current batch transaction, else rel == NULL */
	Relation	rel;
	int			nindexes;
	Relation   *indexes;
	IndexInfo **infos;
	TupleTableSlot *slot;
} FcSerialTable;

/* The worker's state */
typedef struct FcSerialState
{
	FcSerialShared *shared;
	HTAB	   *tables;
	bool		in_batch;		/* a batch transaction is open */
	int			batch_records;
	EState	   *estate;
	uint64		phase;
	FcTableCache cache;
	uint64		next_entry;		/* the record after the one replayed now */
} FcSerialState;

/*
 * How many records past a call that must clear dead slots (and so rebuild
 * indexes) are looked through for other dead slots calls will be given.
 */
#define FC_SERIAL_LOOKAHEAD 16384

static void fc_serial_fail(FcSerialState *st, const char *fmt,...) pg_attribute_printf(2, 3);

/*
 * The slot the running call's next insert into tbl gets: the one the call
 * was given, in order.  Anything else means replay went another way.
 */
uint64
fc_call_replay_slot(FcTable *tbl)
{
	const fc_log_call_slot *hint;

	if (fc_next_hint >= fc_nhints)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("replayed call inserted more rows than the logged call did")));
	hint = &fc_hints[fc_next_hint++];
	if (hint->spcid != tbl->key.spcid || hint->relnode != tbl->key.relnode)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("replayed call inserted into storage %u where the logged call inserted into storage %u",
						tbl->key.relnode, hint->relnode)));
	fc_slot_claim(tbl, hint->slotno, tbl->relid);
	if (fc_slot_header(tbl, hint->slotno)->flags & FC_SLOT_USED)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("slot " UINT64_FORMAT " of storage %u, given to the logged call, is in use at replay",
						hint->slotno, hint->relnode)));
	fc_slot_header(tbl, hint->slotno)->link = 0;
	return hint->slotno;
}

static void
fc_serial_fail(FcSerialState *st, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(st->shared->error, sizeof(st->shared->error), fmt, ap);
	va_end(ap);
	st->shared->failed = true;
}

/*
 * A call could not be repeated exactly.  Recovery stops there, unless
 * pg_fastckpt.recovery_accept_call_mismatch says to go on: then a warning
 * says what happened instead (outcome), and startup takes a checkpoint
 * that makes it final.  True to go on.
 */
static bool
fc_serial_mismatch(FcSerialState *st, const char *outcome, const char *msg)
{
	if (!fc_recovery_accept_call_mismatch)
	{
		fc_serial_fail(st, "%s", msg);
		return false;
	}
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("pg_fastckpt: %s", msg),
			 errdetail("%s", outcome),
			 errhint("pg_fastckpt.recovery_accept_call_mismatch is on; turn it off once a checkpoint has been taken.")));
	st->shared->result.calls_mismatched++;
	return true;
}

static FcSerialTable *
fc_serial_table(FcSerialState *st, FcTable *tbl)
{
	bool		found;
	FcSerialTable *t = hash_search(st->tables, &tbl, HASH_ENTER, &found);

	if (!found)
	{
		memset((char *) t + sizeof(FcTable *), 0, sizeof(FcSerialTable) - sizeof(FcTable *));
		t->tbl = tbl;
	}
	return t;
}

/* The table that owns a storage now (a transaction is open). */
static Oid
fc_serial_relid(FcTable *tbl)
{
	return RelidByRelfilenode(tbl->key.spcid == MyDatabaseTableSpace ? 0 : tbl->key.spcid,
							  tbl->key.relnode);
}

/* Does the slot hold a version nobody can see any more? */
static bool
fc_slot_is_dead(FcSlotHeader *hdr)
{
	if (hdr->flags & FC_XMIN_ABORTED)
		return true;
	return TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
		TransactionIdDidCommit(hdr->xmax);
}

static void
fc_serial_batch_begin(FcSerialState *st)
{
	if (st->in_batch)
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	st->estate = CreateExecutorState();
	st->in_batch = true;
	st->batch_records = 0;
}

static void
fc_serial_batch_end(FcSerialState *st)
{
	HASH_SEQ_STATUS seq;
	FcSerialTable *t;

	if (!st->in_batch)
		return;
	hash_seq_init(&seq, st->tables);
	while ((t = hash_seq_search(&seq)) != NULL)
	{
		if (t->rel == NULL)
			continue;
		ExecDropSingleTupleTableSlot(t->slot);
		for (int i = 0; i < t->nindexes; i++)
			index_close(t->indexes[i], NoLock);
		table_close(t->rel, NoLock);
		t->rel = NULL;
	}
	FreeExecutorState(st->estate);
	st->estate = NULL;
	PopActiveSnapshot();
	CommitTransactionCommand();
	st->in_batch = false;
}

/* Open a table and its indexes for index insertion, in the batch. */
static bool
fc_serial_open(FcSerialState *st, FcSerialTable *t)
{
	Oid			relid;
	List	   *indexes;
	ListCell   *lc;
	MemoryContext old;

	if (t->rel != NULL)
		return true;
	relid = fc_serial_relid(t->tbl);
	if (!OidIsValid(relid))
		return false;
	old = MemoryContextSwitchTo(CurTransactionContext);
	t->rel = table_open(relid, RowExclusiveLock);
	indexes = RelationGetIndexList(t->rel);
	t->nindexes = 0;
	t->indexes = palloc(Max(list_length(indexes), 1) * sizeof(Relation));
	t->infos = palloc(Max(list_length(indexes), 1) * sizeof(IndexInfo *));
	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), RowExclusiveLock);

		/* as the executor: writers put nothing into an index not ready */
		if (!ind->rd_index->indisready)
		{
			index_close(ind, NoLock);
			continue;
		}
		t->indexes[t->nindexes] = ind;
		t->infos[t->nindexes] = BuildIndexInfo(ind);
		t->nindexes++;
	}
	t->slot = MakeSingleTupleTableSlot(RelationGetDescr(t->rel), &TTSOpsHeapTuple);
	MemoryContextSwitchTo(old);
	return true;
}

/* Name the index in errors of indexing a replayed row (its expressions). */
typedef struct FcIndexingRow
{
	Relation	table;
	Relation	index;
} FcIndexingRow;

static void
fc_serial_index_error_context(void *arg)
{
	FcIndexingRow *what = (FcIndexingRow *) arg;

	errcontext("indexing a row restored from the log into index \"%s\" of fastckpt table \"%s\"",
			   RelationGetRelationName(what->index), RelationGetRelationName(what->table));
}

/*
 * Index a row that a VALUES record put into an empty slot.  No uniqueness
 * check: the row was unique when it committed.
 */
static void
fc_serial_index_row(FcSerialState *st, FcSerialTable *t, uint64 slotno)
{
	FcSlotHeader *hdr = fc_slot_header(t->tbl, slotno);
	ExprContext *econtext;
	HeapTupleData tuple;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ErrorContextCallback errcb;
	FcIndexingRow what;
	Oid			save_userid;
	int			save_sec;
	int			save_nestlevel;

	if (!fc_serial_open(st, t) || t->nindexes == 0)
		return;
	what.table = t->rel;
	errcb.callback = fc_serial_index_error_context;
	errcb.arg = &what;
	errcb.previous = error_context_stack;
	tuple.t_len = hdr->live_len;
	tuple.t_data = (HeapTupleHeader) fc_pp_live((char *) hdr, &t->tbl->layout);
	tuple.t_tableOid = RelationGetRelid(t->rel);
	fc_slot_to_tid(slotno, &tuple.t_self);
	ExecStoreHeapTuple(&tuple, t->slot, false);
	econtext = GetPerTupleExprContext(st->estate);
	econtext->ecxt_scantuple = t->slot;

	/*
	 * Evaluate index expressions and predicates as the table's owner, in a
	 * security-restricted operation, as index_build() and REINDEX do: this
	 * worker runs as the bootstrap superuser.  An error aborts the
	 * transaction, which restores the user and the settings.
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(t->rel->rd_rel->relowner,
						   save_sec | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	for (int i = 0; i < t->nindexes; i++)
	{
		IndexInfo  *ii = t->infos[i];

		what.index = t->indexes[i];
		error_context_stack = &errcb;
		if (ii->ii_Predicate != NIL)
		{
			if (ii->ii_PredicateState == NULL)
				ii->ii_PredicateState = ExecPrepareQual(ii->ii_Predicate, st->estate);
			if (!ExecQual(ii->ii_PredicateState, econtext))
				continue;
		}
		FormIndexDatum(ii, t->slot, st->estate, values, isnull);
		(void) index_insert(t->indexes[i], values, isnull, &tuple.t_self, t->rel,
							UNIQUE_CHECK_NO, false, ii);
	}
	error_context_stack = errcb.previous;
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec);
	ExecClearTuple(t->slot);
	ResetPerTupleExprContext(st->estate);
}

/* Apply one row of a VALUES record. */
static void
fc_serial_apply_row(FcSerialState *st, const fc_log_header *rec,
					const fc_log_row *row, const char *image)
{
	FcTable    *tbl = fc_table_lookup_cached(&st->cache, MyDatabaseId, row->spcid, row->relnode);
	FcSerialTable *t;
	FcSlotHeader *hdr;
	bool		used;
	bool		reused;

	if (tbl == NULL || rec->csn < tbl->create_csn)
		return;					/* its storage was dropped later */
	t = fc_serial_table(st, tbl);
	if (row->len == FC_LOG_TOMBSTONE)
	{
		uint64		page;
		char	   *sp;

		if (row->slotno >= fc_table_nslots(tbl))
			return;
		sp = fc_slot_locate(tbl, row->slotno, &page);
		hdr = (FcSlotHeader *) sp;
		if (hdr->flags & FC_SLOT_USED)
		{
			fc_undo_detach_chain(hdr);
			hdr->flags = FC_SLOT_STALE;
			t->stale = true;
		}
		hdr->link = 0;
		fc_slot_install_tombstone(tbl, sp, page, st->phase);
		st->shared->result.rows++;
		return;
	}
	if (row->len > tbl->layout.image_capacity)
	{
		ereport(WARNING,
				(errmsg("pg_fastckpt: log record at %llu holds a %u-byte row for a table whose rows hold at most %u bytes; row skipped",
						(unsigned long long) rec->lsn, row->len, tbl->layout.image_capacity)));
		return;
	}
	fc_slot_claim(tbl, row->slotno, tbl->relid);
	hdr = fc_slot_header(tbl, row->slotno);
	used = (hdr->flags & FC_SLOT_USED) != 0;

	/*
	 * A live row is updated in place (its indexed values are unchanged, or
	 * it would have moved); an emptied or dead one is a slot used again.
	 */
	reused = (hdr->flags & FC_SLOT_STALE) || (used && fc_slot_is_dead(hdr));
	if (used)
		fc_undo_detach_chain(hdr);
	fc_replay_put_image(tbl, row->slotno, image, row->len, st->phase, 0);
	st->shared->result.rows++;
	if (reused)
		t->stale = t->needs_rebuild = true;
	else if (!used && !t->needs_rebuild)
		fc_serial_index_row(st, t, row->slotno);
}

/* Rebuild a table's indexes from its rows; no transaction is open. */
static void
fc_serial_rebuild(FcSerialState *st, FcSerialTable *t)
{
	Oid			relid;
	Oid		   *indexids = NULL;
	int			n = 0;
	uint64		nslots;

	StartTransactionCommand();
	relid = fc_serial_relid(t->tbl);
	if (OidIsValid(relid))
	{
		Relation	rel = table_open(relid, AccessShareLock);
		List	   *indexes = RelationGetIndexList(rel);
		ListCell   *lc;

		indexids = MemoryContextAlloc(TopMemoryContext,
									  Max(list_length(indexes), 1) * sizeof(Oid));
		foreach(lc, indexes)
			indexids[n++] = lfirst_oid(lc);
		table_close(rel, AccessShareLock);
	}
	CommitTransactionCommand();
	for (int i = 0; i < n; i++)
		(void) fc_rebuild_one_index(relid, indexids[i]);
	if (indexids != NULL)
		pfree(indexids);

	nslots = fc_table_nslots(t->tbl);
	for (uint64 s = 0; s < nslots; s++)
		fc_slot_header(t->tbl, s)->flags &= ~FC_SLOT_STALE;
	t->stale = t->needs_rebuild = false;
	st->shared->result.index_rebuilds++;
}

static void
fc_serial_rebuild_tables(FcSerialState *st, bool all_stale)
{
	HASH_SEQ_STATUS seq;
	FcSerialTable *t;
	List	   *todo = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	/* the list outlives the batch, which ends first: rebuilds commit */
	hash_seq_init(&seq, st->tables);
	while ((t = hash_seq_search(&seq)) != NULL)
		if (t->needs_rebuild || (all_stale && t->stale))
			todo = lappend(todo, t);
	MemoryContextSwitchTo(old);
	if (todo == NIL)
		return;
	fc_serial_batch_end(st);
	foreach(lc, todo)
		fc_serial_rebuild(st, (FcSerialTable *) lfirst(lc));
	list_free(todo);
}

/*
 * Clear a dead row or an emptied slot for a call that was given it, as
 * VACUUM had; its table's indexes then need a rebuild.  False if there
 * was nothing to clear.
 */
static bool
fc_serial_clear_slot(FcSerialState *st, FcTable *tbl, FcSlotHeader *hdr)
{
	FcSerialTable *t;

	if (!(hdr->flags & FC_SLOT_STALE) &&
		!((hdr->flags & FC_SLOT_USED) && fc_slot_is_dead(hdr)))
		return false;
	t = fc_serial_table(st, tbl);
	fc_undo_detach_chain(hdr);
	hdr->flags = 0;
	t->stale = t->needs_rebuild = true;
	return true;
}

/*
 * Before a rebuild: clear the slots the calls of the next records were
 * given that are dead already, so that one rebuild serves them all.  A
 * dead row is invisible to every later call, and a slot without a row is
 * passed over by their index scans; what they write there is indexed after
 * this rebuild.
 */
static void
fc_serial_clear_ahead(FcSerialState *st)
{
	const FcSerialShared *shared = st->shared;
	uint64		end = Min(shared->nentries, st->next_entry + FC_SERIAL_LOOKAHEAD);
	FcLogReader *reader;

	if (st->next_entry >= end)
		return;
	reader = fc_log_reader_open(shared->entries[st->next_entry].lsn);
	for (uint64 i = st->next_entry; i < end; i++)
	{
		const fc_log_header *rec;
		fc_log_call_view view;

		fc_log_reader_seek(reader, shared->entries[i].lsn);
		rec = fc_log_reader_next(reader);
		fc_log_reader_release(reader);
		if (rec == NULL || rec->lsn != shared->entries[i].lsn)
			break;				/* the replay itself will say so */
		if (rec->kind != FC_REC_CALL || !fc_log_call_parse(rec, &view))
			continue;
		for (int k = 0; k < rec->nentries; k++)
		{
			const fc_log_call_slot *h = &view.slots[k];
			FcTable    *tbl = fc_table_lookup_cached(&st->cache, MyDatabaseId,
													 h->spcid, h->relnode);

			if (tbl != NULL && h->slotno < fc_table_nslots(tbl))
				(void) fc_serial_clear_slot(st, tbl, fc_slot_header(tbl, h->slotno));
		}
	}
	fc_log_reader_close(reader);
}

/*
 * Make the slots the call was given ready for it, as VACUUM had made them
 * for the call: a dead row or an emptied slot there is cleared, and its
 * table's stale index entries rebuilt away before the call runs.  NULL, or
 * why the call cannot have them.
 */
static char *
fc_serial_prepare_slots(FcSerialState *st, const fc_log_header *rec,
						const fc_log_call_view *view)
{
	bool		cleared = false;

	for (int i = 0; i < rec->nentries; i++)
	{
		const fc_log_call_slot *h = &view->slots[i];
		FcTable    *tbl = fc_table_lookup_cached(&st->cache, MyDatabaseId, h->spcid, h->relnode);
		FcSlotHeader *hdr;

		if (tbl == NULL)
			return psprintf("the call logged at %llu inserted into storage %u, which does not exist at replay",
							(unsigned long long) rec->lsn, h->relnode);
		fc_slot_claim(tbl, h->slotno, tbl->relid);
		hdr = fc_slot_header(tbl, h->slotno);
		if ((hdr->flags & FC_SLOT_USED) && !fc_slot_is_dead(hdr))
			return psprintf("the call logged at %llu was given slot " UINT64_FORMAT " of storage %u, which holds a live row at replay",
							(unsigned long long) rec->lsn, h->slotno, h->relnode);
		if (fc_serial_clear_slot(st, tbl, hdr))
			cleared = true;
	}
	if (cleared)
		fc_serial_clear_ahead(st);
	fc_serial_rebuild_tables(st, false);
	return NULL;
}

/* Turn the logged arguments back into constants. */
static List *
fc_serial_call_args(const fc_log_call_view *view)
{
	List	   *args = NIL;
	char	   *pos = (char *) view->arg_data;

	for (int i = 0; i < view->call->nargs; i++)
	{
		Oid			type = view->args[i].type;
		int16		typlen;
		bool		typbyval;
		bool		isnull;
		Datum		value;

		/* never logged since such calls fall back; an older log may hold one */
		if (!fc_arg_type_portable(type))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("argument %d is an anonymous record, which replay cannot read", i + 1)));
		get_typlenbyval(type, &typlen, &typbyval);
		value = datumRestore(&pos, &isnull);
		args = lappend(args, makeConst(type, -1, view->args[i].collation, typlen,
									   value, isnull, typbyval));
	}
	return args;
}

/*
 * Set the session the call ran with (see fc_call_session_settings): its
 * search_path, then the date and time settings, then the carried
 * fc_replay_settings that were not as replay sets them, as name and value
 * pairs, all NUL-separated; a record of an earlier build has the
 * search_path alone, or no pairs.  Every other of fc_replay_settings gets
 * replay's value, whatever the server's configuration says (see procs.h).
 */
static void
fc_serial_restore_session(const char *session, uint32 len)
{
	static char *last_settings = NULL;
	static uint32 last_settings_len = 0;
	const char *pos = session;
	const char *end = session + len;
	const char *settings = memchr(session, '\0', len);
	uint32		settings_len = settings ? end - settings : 0;
	const char **values = palloc0(fc_replay_nsettings * sizeof(char *));
	char	   *name = NULL;
	int			field = 0;

	/*
	 * Cached plans keep what planning read of these settings: plan afresh
	 * when this call's settings are not the previous call's.
	 */
	if (last_settings != NULL &&
		(settings_len != last_settings_len ||
		 (settings_len > 0 && memcmp(settings, last_settings, settings_len) != 0)))
		ResetPlanCache();
	if (last_settings != NULL)
		pfree(last_settings);
	last_settings = MemoryContextAlloc(TopMemoryContext, Max(settings_len, 1));
	if (settings_len > 0)
		memcpy(last_settings, settings, settings_len);
	last_settings_len = settings_len;

	for (; pos <= end; field++)
	{
		const char *nul = memchr(pos, '\0', end - pos);
		char	   *value = pnstrdup(pos, (nul ? nul : end) - pos);

		if (field <= FC_CALL_SESSION_NSETTINGS)
			(void) set_config_option(field == 0 ? "search_path" :
									 fc_call_session_settings[field - 1],
									 value, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_LOCAL, true, 0, false);
		else if (name == NULL)
			name = value;
		else
		{
			int			i = fc_replay_setting_index(name);

			if (i < 0 || !fc_replay_settings[i].carried)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("CALL record carries setting \"%s\", which replay does not set",
								name)));
			values[i] = value;
			name = NULL;
		}
		if (nul == NULL)
			break;
		pos = nul + 1;
	}
	if (name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("CALL record carries setting \"%s\" without a value", name)));

	for (int i = 0; i < fc_replay_nsettings; i++)
	{
		const char *value = values[i] ? values[i] : fc_replay_settings[i].value;
		const char *current = GetConfigOption(fc_replay_settings[i].name, true, false);

		/* setting timezone_abbreviations reads a file: only when needed */
		if (current == NULL || strcmp(current, value) != 0)
			(void) set_config_option(fc_replay_settings[i].name, value,
									 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0,
									 false);
	}
	pfree(values);
}

/*
 * The routine's result type for these arguments: a polymorphic one
 * (anyelement, anycompatible ...) resolved from the arguments' types, as
 * the parser resolved it for the logged call; PL/pgSQL refuses to run a
 * call whose result type is left polymorphic.
 */
static Oid
fc_serial_result_type(Oid funcid, List *args)
{
	Oid			rettype;
	Oid		   *declared;
	Oid		   *actual;
	int			nargs;
	int			i = 0;
	ListCell   *lc;

	rettype = get_func_signature(funcid, &declared, &nargs);
	if (!IsPolymorphicType(rettype))
		return rettype;
	actual = palloc(Max(list_length(args), 1) * sizeof(Oid));
	foreach(lc, args)
		actual[i++] = exprType((Node *) lfirst(lc));
	return enforce_generic_type_consistency(actual, declared, Min(nargs, i),
											rettype, false);
}

/* Run the routine as the logged call did; errors propagate. */
static void
fc_serial_execute(const fc_log_call_view *view)
{
	const fc_log_call *call = view->call;
	HeapTuple	tup;
	List	   *args;
	FuncExpr   *fexpr;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(call->funcid));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("routine with OID %u no longer exists", call->funcid)));
	if (HeapTupleHeaderGetRawXmin(tup->t_data) != call->definition)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("routine %s was changed after the call", get_func_name(call->funcid))));
	ReleaseSysCache(tup);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(call->roleid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u, which made the call, no longer exists", call->roleid)));

	fc_serial_restore_session(view->search_path, call->search_path_len);

	args = fc_serial_call_args(view);
	fexpr = makeFuncExpr(call->funcid, fc_serial_result_type(call->funcid, args),
						 args, InvalidOid, call->inputcollid,
						 COERCE_EXPLICIT_CALL);
	fexpr->funcvariadic = call->variadic != 0;
	if (call->is_procedure)
	{
		CallStmt   *stmt = makeNode(CallStmt);

		stmt->funcexpr = fexpr;
		ExecuteCallStmt(stmt, NULL, true, None_Receiver);
	}
	else
	{
		EState	   *estate = CreateExecutorState();
		ExprState  *state = ExecPrepareExpr((Expr *) fexpr, estate);
		bool		isnull;

		(void) ExecEvalExprSwitchContext(state, GetPerTupleExprContext(estate), &isnull);
		FreeExecutorState(estate);
	}
}

/* The routine's name for messages, or its OID if it has none now. */
static char *
fc_routine_label(Oid funcid)
{
	char	   *name;
	char	   *label;

	StartTransactionCommand();
	name = format_procedure_extended(funcid, FORMAT_PROC_INVALID_AS_NULL |
									 FORMAT_PROC_FORCE_QUALIFY);
	label = name ? psprintf("%s (OID %u)", name, funcid) : psprintf("%u", funcid);
	label = MemoryContextStrdup(TopMemoryContext, label);
	CommitTransactionCommand();
	return label;
}

/*
 * Replay one CALL record; false if recovery stops, for it could not be
 * repeated exactly (fc_serial_mismatch).
 */
static bool
fc_serial_call(FcSerialState *st, const fc_log_header *rec)
{
	fc_log_call_view view;
	Oid			save_userid;
	int			save_sec;
	char	   *problem;

	if (!fc_log_call_parse(rec, &view))
	{
		fc_serial_fail(st, "the CALL record at %llu is malformed", (unsigned long long) rec->lsn);
		return false;
	}
	problem = fc_serial_prepare_slots(st, rec, &view);
	if (problem != NULL)
		return fc_serial_mismatch(st, "The call is skipped.", problem);
	fc_serial_batch_end(st);

	fc_hints = view.slots;
	fc_nhints = rec->nentries;
	fc_next_hint = 0;
	fc_replayed_digest = 0;
	fc_replayed_nwritten = 0;
	fc_helpers_replay_begin(view.call->seed, (TimestampTz) view.call->txn_time);

	StartTransactionCommand();
	GetUserIdAndSecContext(&save_userid, &save_sec);
	PG_TRY();
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		SetUserIdAndSecContext(view.call->roleid, save_sec | SECURITY_LOCAL_USERID_CHANGE);
		fc_replaying_call = true;
		fc_serial_execute(&view);
		if (fc_next_hint != fc_nhints)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("replayed call inserted %u rows where the logged call inserted %u",
							fc_next_hint, fc_nhints)));
		SetUserIdAndSecContext(save_userid, save_sec);
		PopActiveSnapshot();
		/* for snapshots taken before this commit (fc_gate_check_snapshot) */
		fc_gate_note_replayed_call(GetTopTransactionIdIfAny());
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/*
		 * Not the caller's context: a batch of VALUES records may have left
		 * that in TopTransactionContext, which the abort below resets.
		 */
		MemoryContextSwitchTo(TopMemoryContext);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		problem = psprintf("replaying the call of routine %s logged at %llu (CSN %llu) failed: %s",
						   fc_routine_label(view.call->funcid), (unsigned long long) rec->lsn,
						   (unsigned long long) rec->csn, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	fc_replaying_call = false;
	fc_hints = NULL;
	fc_nhints = 0;
	fc_helpers_replay_end();
	if (problem != NULL)
		return fc_serial_mismatch(st, "The call is skipped: its transaction was rolled back.", problem);

	st->shared->result.calls++;
	if (fc_replayed_digest != view.call->digest || fc_replayed_nwritten != view.call->nwritten)
		return fc_serial_mismatch(st, "The replayed call's writes stand.",
								  psprintf("the call of routine %s logged at %llu (CSN %llu) wrote something else at replay (%u rows, digest %016llx; logged: %u rows, digest %016llx)",
										   fc_routine_label(view.call->funcid), (unsigned long long) rec->lsn,
										   (unsigned long long) rec->csn, fc_replayed_nwritten,
										   (unsigned long long) fc_replayed_digest, view.call->nwritten,
										   (unsigned long long) view.call->digest));
	return true;
}

static void
fc_serial_apply_values(FcSerialState *st, const fc_log_header *rec)
{
	fc_log_cursor cur;
	const fc_log_row *row;
	const char *image;

	fc_serial_batch_begin(st);
	fc_log_cursor_init(&cur, rec);
	while (fc_log_next_row(&cur, &row, &image))
		fc_serial_apply_row(st, rec, row, image);
	st->shared->result.values_records++;
	if (++st->batch_records >= FC_SERIAL_BATCH)
		fc_serial_batch_end(st);
}

static void
fc_serial_finish_table(FcTable *tbl, void *arg)
{
	if (tbl->key.dbid == MyDatabaseId)
		fc_table_finish_replay(tbl);
}

/* Replay the records, stopping at the first that cannot be repeated. */
static void
fc_serial_run(FcSerialState *st)
{
	FcSerialShared *shared = st->shared;
	FcLogReader *reader = fc_log_reader_open(shared->entries[0].lsn);
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz last_report = start;

	for (uint64 i = 0; i < shared->nentries; i++)
	{
		const fc_log_header *rec;

		fc_worker_check_interrupts();
		fc_log_reader_seek(reader, shared->entries[i].lsn);
		rec = fc_log_reader_next(reader);
		/* the record stays in the reader's buffer; the file may not */
		fc_log_reader_release(reader);
		if (rec == NULL || rec->lsn != shared->entries[i].lsn)
		{
			fc_serial_fail(st, "the log record at %llu (%llu of %llu in commit order) could not be read again (found %s)",
						   (unsigned long long) shared->entries[i].lsn,
						   (unsigned long long) i, (unsigned long long) shared->nentries,
						   rec == NULL ? "no valid record" : psprintf("a record at %llu", (unsigned long long) rec->lsn));
			break;
		}
		st->next_entry = i + 1;
		if (rec->kind == FC_REC_CALL)
		{
			if (!fc_serial_call(st, rec))
				break;
		}
		else
			fc_serial_apply_values(st, rec);

		if ((i & 1023) == 1023)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (TimestampDifferenceExceeds(last_report, now, 10000))
			{
				last_report = now;
				ereport(LOG,
						(errmsg("pg_fastckpt: database %u: replayed %llu of %llu records in commit order (%llu calls), elapsed %.1f s",
								MyDatabaseId, (unsigned long long) (i + 1),
								(unsigned long long) shared->nentries,
								(unsigned long long) shared->result.calls,
								(double) TimestampDifferenceMilliseconds(start, now) / 1000.0)));
			}
		}
	}
	fc_log_reader_close(reader);
	fc_serial_batch_end(st);
	if (shared->failed)
		return;
	fc_serial_rebuild_tables(st, true);
	fc_table_foreach(fc_serial_finish_table, NULL);
	shared->result.seconds =
		(double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
}

/*
 * SIGTERM: die() as any backend, but first note whether it came from
 * another process (pg_terminate_backend of the worker, say) or from the
 * worker itself (a replayed routine terminating its own backend): the
 * leader runs recovery again after the one, and takes the other as the
 * call's failure.
 */
static volatile FcSerialShared *fc_serial_signalled = NULL;

static void
fc_serial_sigterm(int signo, siginfo_t *info, void *context)
{
	if (fc_serial_signalled != NULL && info != NULL && info->si_pid != MyProcPid)
		fc_serial_signalled->terminated = true;
	die(signo);
}

void
fc_call_replay_main(Datum arg)
{
	dsm_segment *seg;
	FcSerialState st;
	HASHCTL		ctl;
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = fc_serial_sigterm;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&act.sa_mask);
	sigaction(SIGTERM, &act, NULL);
	BackgroundWorkerUnblockSignals();
	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		proc_exit(1);
	memset(&st, 0, sizeof(st));
	st.shared = (FcSerialShared *) dsm_segment_address(seg);
	fc_serial_signalled = st.shared;
	/* a crash elsewhere is not this replay's (the leader counts those) */
	fc_attempt_join(fc_call_replay_attempt_path(st.shared->dboid));
	BackgroundWorkerInitializeConnectionByOid(st.shared->dboid, InvalidOid,
											  BGWORKER_BYPASS_ALLOWCONN);
	fc_gate_register_recovery_process();

	/*
	 * The calls ran without parallel workers (determinism.c), and so do
	 * they here (no parallel query in recovery: fc_gate_planner; a call
	 * that ran DDL is no CALL record): a crash of a process of theirs is
	 * then this one's.
	 */
	SetConfigOption("max_parallel_maintenance_workers", "0", PGC_SUSET, PGC_S_OVERRIDE);

	ctl.keysize = sizeof(FcTable *);
	ctl.entrysize = sizeof(FcSerialTable);
	ctl.hcxt = TopMemoryContext;
	st.tables = hash_create("pg_fastckpt serial replay tables", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	st.phase = fc_pp_phase();
	fc_serial_run(&st);
	st.shared->finished = true;
	dsm_detach(seg);
	proc_exit(0);
}

/*
 * Leader: wait for the worker to end; a termination request to the leader
 * stops it too, rather than wait for every call to replay first.
 */
static void
fc_wait_for_serial_worker(BackgroundWorkerHandle *handle)
{
	for (;;)
	{
		pid_t		pid;
		BgwHandleStatus status = GetBackgroundWorkerPid(handle, &pid);

		if (status == BGWH_STOPPED || status == BGWH_POSTMASTER_DIED)
			return;
		if (ShutdownRequestPending)
		{
			TerminateBackgroundWorker(handle);
			(void) WaitForBackgroundWorkerShutdown(handle);
			return;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Leader: start the worker for one database and wait for it.  With no
 * worker slot free, retry until one is (worker_slots.c).  False, with the
 * reason in error, if the calls were not all replayed: one could not be
 * repeated, or the worker exited before it finished (a routine ending its
 * own process at replay is the same failure of that database's calls).
 * The leader leaves instead if the postmaster is gone or asks it to.
 */
bool
fc_replay_serial_database(const FcSerialDb *db, uint64 end_lsn, FcSerialResult *result,
						  char *error, size_t errlen)
{
	Size		size = add_size(offsetof(FcSerialShared, entries),
								mul_size(db->nentries, sizeof(FcSerialEntry)));
	dsm_segment *seg = dsm_create(size, 0);
	FcSerialShared *shared = (FcSerialShared *) dsm_segment_address(seg);
	BackgroundWorkerHandle *handle;
	char		name[BGW_MAXLEN];
	bool		ok;
	FcSlotWait	slot_wait = {0};
	char	   *purpose = psprintf("to replay the calls of database %u", db->dbid);

	memset(shared, 0, offsetof(FcSerialShared, entries));
	shared->dboid = db->dbid;
	shared->end_lsn = end_lsn;
	shared->nentries = db->nentries;
	memcpy(shared->entries, db->entries, db->nentries * sizeof(FcSerialEntry));

	snprintf(name, sizeof(name), "pg_fastckpt call replay for database %u", db->dbid);
	while ((handle = fc_start_dynamic_worker(BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
											 "fc_call_replay_main", "pg_fastckpt call replay",
											 name, UInt32GetDatum(dsm_segment_handle(seg)))) == NULL)
		fc_worker_slot_wait(&slot_wait, purpose);
	fc_wait_for_serial_worker(handle);
	fc_recovery_exit_if_shutdown();
	/* the worker left because the postmaster died: decide nothing */
	if (!PostmasterIsAlive())
		proc_exit(1);
	/* ... or another process terminated it: nothing is wrong with the calls */
	if (!shared->finished && !shared->failed && shared->terminated)
		fc_recovery_stop(psprintf("the worker replaying the calls of database %u was terminated", db->dbid));

	ok = shared->finished && !shared->failed;
	if (shared->failed)
		snprintf(error, errlen, "database %u: %s", db->dbid, shared->error);
	else if (!shared->finished)
		snprintf(error, errlen,
				 "database %u: the worker replaying its calls stopped before it finished; its error is in the server log",
				 db->dbid);
	*result = shared->result;
	dsm_detach(seg);
	return ok;
}
