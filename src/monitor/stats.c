/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  SQL-callable functions behind the fastckpt_stat_* views.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "access/fastckpt_am.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/gate.h"
#include "store/arena.h"
#include "store/table_store.h"
#include "txn/write_set.h"

PG_FUNCTION_INFO_V1(fastckpt_stat_memory_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_tables_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_recovery_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_log_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_checkpointer_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_reset);

static void
fc_check_natts(TupleDesc tupdesc, int natts, const char *view)
{
	if (tupdesc->natts != natts)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the SQL definition of %s does not match the loaded pg_fastckpt library", view),
				 errdetail("It has %d columns; the library fills %d.", tupdesc->natts, natts),
				 errhint("The extension's SQL objects come from the script that ran at CREATE EXTENSION: "
						 "install the library and the script of the same release.")));
}

/*
 * The result row type, checked against the columns this library fills: an
 * extension script from another release must give an error, not a crash.
 */
static TupleDesc
fc_result_desc(FunctionCallInfo fcinfo, int natts, const char *view)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	fc_check_natts(tupdesc, natts, view);
	return tupdesc;
}


Datum
fastckpt_stat_memory_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcArenaStats stats;
	Datum		values[7];
	bool		nulls[7] = {0};

	tupdesc = fc_result_desc(fcinfo, lengthof(values), "fastckpt_stat_memory");
	fc_arena_get_stats(&stats);
	values[0] = Int64GetDatum(stats.limit_bytes);
	values[1] = Int64GetDatum(stats.used_bytes);
	values[2] = Int64GetDatum(stats.free_bytes);
	values[3] = Int64GetDatum(stats.kind_bytes[FC_PAGE_SLOTS]);
	values[4] = Int64GetDatum(stats.kind_bytes[FC_PAGE_UNDO]);
	values[5] = Int64GetDatum(stats.kind_bytes[FC_PAGE_DIRECTORY]);
	values[6] = Int64GetDatum((int64) FC_PAGE_SIZE);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

typedef struct FcTableRow
{
	Oid			dbid;
	Oid			spcid;
	Oid			relnode;
	int64		rows;
	int64		dead_rows;
	int64		slots_used;
	int64		slots_allocated;
	int64		slot_bytes;
	int64		image_bytes;
	int64		memory_bytes;
	int64		undo_records;
	int64		undo_bytes;
	int64		dirty_rows;
	int64		ckpt_bytes;
} FcTableRow;

typedef struct FcTableRows
{
	FcTableRow *rows;
	uint64	   *generations;	/* of each row's storage, when listed */
	int			n;
	int			cap;
} FcTableRows;

/* Slots counted per hold of the directory lock, which DDL waits for. */
#define FC_STAT_SLOTS_PER_HOLD	16384

/* List a storage and what it says of itself; its slots are counted after. */
static void
fc_list_table(FcTable *tbl, void *arg)
{
	FcTableRows *out = (FcTableRows *) arg;
	FcTableRow *r;

	if (out->n == out->cap)
	{
		out->cap *= 2;
		out->rows = repalloc(out->rows, out->cap * sizeof(FcTableRow));
		out->generations = repalloc(out->generations, out->cap * sizeof(uint64));
	}
	out->generations[out->n] = tbl->generation;
	r = &out->rows[out->n++];
	memset(r, 0, sizeof(FcTableRow));
	r->dbid = tbl->key.dbid;
	r->spcid = tbl->key.spcid;
	r->relnode = tbl->key.relnode;
	r->slots_allocated = (int64) tbl->npages * tbl->slots_per_page;
	r->slot_bytes = tbl->layout.stride;
	r->ckpt_bytes = (int64) tbl->ckpt_bytes;
	r->image_bytes = tbl->layout.image_capacity;
	r->undo_records = tbl->undo_live;
	r->undo_bytes = (int64) tbl->undo_pages * FC_PAGE_SIZE;
	r->memory_bytes = (int64) (tbl->npages + tbl->ndir_pages) * FC_PAGE_SIZE + r->undo_bytes;
}

/*
 * Count a storage's rows and dirty shadow images by looking at every slot
 * (the views are rare, and counting in the commit path would cost every
 * transaction), a batch of slots per hold of the directory lock, so that
 * CREATE, DROP and TRUNCATE do not wait for a scan of a large table.
 * False if the storage went away meanwhile.
 */
static bool
fc_count_table_slots(FcTableRow *r, uint64 generation, uint64 phase)
{
	uint32		cur = fc_pp_current_image(phase);
	uint64		from = 0;

	for (;;)
	{
		FcTable    *tbl;
		uint64		to;
		bool		done;

		LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
		tbl = fc_table_find_locked(r->dbid, r->spcid, r->relnode);
		if (tbl == NULL || tbl->generation != generation)
		{
			LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
			return false;
		}
		to = Min(fc_table_nslots(tbl), from + FC_STAT_SLOTS_PER_HOLD);
		done = to < from + FC_STAT_SLOTS_PER_HOLD;
		for (uint64 s = from; s < to; s++)
		{
			FcSlotHeader *hdr = fc_slot_header(tbl, s);
			LWLock	   *lock = fc_slot_lock(tbl, s);

			LWLockAcquire(lock, LW_SHARED);
			if (fc_pp_is_pending(hdr->marks.state[cur]))
				r->dirty_rows++;
			if (hdr->flags & FC_SLOT_USED)
			{
				r->slots_used++;
				if ((hdr->flags & FC_SLOT_DEAD) || fc_xmax_committed(hdr) ||
					(hdr->undo == NULL && fc_xmin_aborted(hdr->xmin, &hdr->flags)))
					r->dead_rows++;
				else
					r->rows++;
			}
			LWLockRelease(lock);
		}
		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		if (done)
			return true;
		from = to;
		CHECK_FOR_INTERRUPTS();
	}
}

Datum
fastckpt_stat_tables_internal(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FcTableRows rows;
	uint64		phase;

	InitMaterializedSRF(fcinfo, 0);
	fc_check_natts(rsinfo->setDesc, 14, "fastckpt_stat_tables");
	rows.cap = 16;
	rows.n = 0;
	rows.rows = palloc(rows.cap * sizeof(FcTableRow));
	rows.generations = palloc(rows.cap * sizeof(uint64));
	fc_table_foreach(fc_list_table, &rows);
	phase = fc_pp_phase();

	for (int i = 0; i < rows.n; i++)
	{
		FcTableRow *r = &rows.rows[i];
		Datum		values[14];
		bool		nulls[14] = {0};

		if (!fc_count_table_slots(r, rows.generations[i], phase))
			continue;			/* dropped or truncated meanwhile */

		values[0] = ObjectIdGetDatum(r->dbid);
		values[1] = ObjectIdGetDatum(r->spcid);
		values[2] = ObjectIdGetDatum(r->relnode);
		values[3] = Int64GetDatum(r->rows);
		values[4] = Int64GetDatum(r->dead_rows);
		/* rows not all back yet, or never (its database stays closed) */
		nulls[3] = nulls[4] = (!fc_gate_is_open() ||
							   fc_gate_database_closed(r->dbid, NULL, 0));
		values[5] = Int64GetDatum(r->slots_used);
		values[6] = Int64GetDatum(r->slots_allocated);
		values[7] = Int64GetDatum(r->slot_bytes);
		values[8] = Int64GetDatum(r->image_bytes);
		values[9] = Int64GetDatum(r->memory_bytes);
		values[10] = Int64GetDatum(r->undo_records);
		values[11] = Int64GetDatum(r->undo_bytes);
		values[12] = Int64GetDatum(r->dirty_rows);
		values[13] = Int64GetDatum(r->ckpt_bytes);
		nulls[13] = (r->ckpt_bytes == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
fastckpt_stat_recovery_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcRecoveryStats stats;
	Datum		values[28];
	bool		nulls[28] = {0};

	tupdesc = fc_result_desc(fcinfo, lengthof(values), "fastckpt_stat_recovery");
	fc_recovery_stats_get(&stats);
	/* a database kept closed: its own reason (others' are not shown) */
	if (fc_gate_database_closed(MyDatabaseId, stats.error, sizeof(stats.error)))
		values[0] = BoolGetDatum(false);
	else
		values[0] = BoolGetDatum(fc_gate_passes());
	values[1] = TimestampTzGetDatum(stats.started_at);
	nulls[1] = (stats.started_at == 0);
	values[2] = TimestampTzGetDatum(stats.finished_at);
	nulls[2] = (stats.finished_at == 0);
	values[3] = Int32GetDatum(stats.databases);
	values[4] = Int32GetDatum(stats.tables);
	values[5] = Int32GetDatum(stats.indexes);
	values[6] = Int32GetDatum(stats.workers);
	values[7] = Int64GetDatum(stats.log_bytes);
	values[8] = Int64GetDatum(stats.log_records);
	values[9] = Int64GetDatum(stats.records_applied);
	values[10] = Int64GetDatum(stats.records_skipped);
	values[11] = Int64GetDatum(stats.rows_applied);
	values[12] = Int32GetDatum(stats.replay_workers);
	values[13] = Float8GetDatum(stats.replay_seconds);
	values[14] = Float8GetDatum(stats.index_rebuild_seconds);
	values[15] = Float8GetDatum(stats.total_seconds);
	values[16] = Int64GetDatum(stats.checkpoint_seq);
	nulls[16] = (stats.checkpoint_seq == 0);
	values[17] = Int64GetDatum(stats.checkpoint_csn);
	nulls[17] = (stats.checkpoint_seq == 0);
	values[18] = BoolGetDatum(stats.checkpoint_fallback);
	values[19] = Int32GetDatum(stats.load_workers);
	values[20] = Int64GetDatum(stats.load_bytes);
	values[21] = Int64GetDatum(stats.load_rows);
	values[22] = Int64GetDatum(stats.load_deltas);
	values[23] = Float8GetDatum(stats.load_seconds);
	values[24] = Int64GetDatum(stats.calls_replayed);
	values[25] = Float8GetDatum(stats.call_replay_seconds);
	values[26] = Int64GetDatum(stats.calls_mismatched);
	values[27] = CStringGetTextDatum(stats.error);
	nulls[27] = (stats.error[0] == '\0');
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
fastckpt_stat_log_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcLogStats	stats;
	uint64		commits;
	uint64		fallbacks[FC_FALLBACK_NREASONS];
	Datum		values[19];
	bool		nulls[19] = {0};

	tupdesc = fc_result_desc(fcinfo, lengthof(values), "fastckpt_stat_log");
	fc_log_stats_get(&stats);
	commits = stats.records[FC_REC_VALUES] + stats.records[FC_REC_CALL];
	values[0] = Int64GetDatum((int64) stats.insert_lsn);
	values[1] = Int64GetDatum((int64) stats.flush_lsn);
	values[2] = Int64GetDatum((int64) stats.bytes);
	values[3] = Int64GetDatum((int64) stats.records[FC_REC_VALUES]);
	values[4] = Int64GetDatum((int64) stats.records[FC_REC_CALL]);
	values[5] = Int64GetDatum((int64) stats.records[FC_REC_DDL]);
	values[6] = Int64GetDatum((int64) stats.records[FC_REC_ABORT]);
	values[7] = Int64GetDatum((int64) stats.flushes);
	values[8] = Int64GetDatum((int64) stats.backend_flushes);
	values[9] = Float8GetDatum(stats.flushes > 0 ? (double) commits / stats.flushes : 0.0);
	values[10] = Float8GetDatum(commits > 0 ? (double) stats.bytes / commits : 0.0);
	values[11] = Int64GetDatum((int64) stats.commit_waits);
	values[12] = Float8GetDatum((double) stats.commit_wait_us / 1000.0);
	values[13] = Float8GetDatum(stats.commit_waits > 0 ?
								(double) stats.commit_wait_us / 1000.0 / stats.commit_waits : 0.0);
	values[14] = Int64GetDatum((int64) stats.buffer_full_waits);
	values[15] = Int64GetDatum((int64) stats.write_errors);
	values[16] = BoolGetDatum(stats.failing);
	values[17] = CStringGetTextDatum(stats.last_error);
	nulls[17] = (stats.last_error[0] == '\0');
	fc_procs_fallback_totals(fallbacks);
	values[18] = fc_fallbacks_jsonb(fallbacks);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
fastckpt_stat_checkpointer_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcCkptStats st;
	Datum		values[30];
	bool		nulls[30] = {0};
	Datum		hits[FC_PAUSE_POINTS - 1];
	uint64		insert_lsn = fc_log_insert_lsn();

	tupdesc = fc_result_desc(fcinfo, lengthof(values), "fastckpt_stat_checkpointer");
	fc_ckpt_stats_get(&st);
	values[0] = Int64GetDatum((int64) st.checkpoints);
	values[1] = Int64GetDatum((int64) st.by_trigger[FC_TRIGGER_TIMED]);
	values[2] = Int64GetDatum((int64) st.by_trigger[FC_TRIGGER_SIZE]);
	values[3] = Int64GetDatum((int64) st.by_trigger[FC_TRIGGER_REQUESTED]);
	values[4] = Int64GetDatum((int64) st.by_trigger[FC_TRIGGER_SHUTDOWN]);
	values[5] = Int64GetDatum((int64) st.failures);
	values[6] = BoolGetDatum(st.in_progress);
	values[7] = Int64GetDatum((int64) st.last_seq);
	values[8] = Int64GetDatum((int64) st.last_csn);
	values[9] = Int64GetDatum((int64) st.last_start_lsn);
	values[10] = TimestampTzGetDatum(st.last_started_at);
	nulls[10] = (st.last_started_at == 0);
	values[11] = TimestampTzGetDatum(st.last_finished_at);
	nulls[11] = (st.last_finished_at == 0);
	values[12] = Float8GetDatum(st.last_seconds);
	values[13] = Int64GetDatum((int64) st.last_bytes_written);
	values[14] = Int64GetDatum((int64) st.last_bytes_reused);
	values[15] = Int64GetDatum((int64) st.last_rows);
	values[16] = Int64GetDatum((int64) st.last_dirty_rows);
	values[17] = Int64GetDatum((int64) st.last_deltas_written);
	values[18] = Int64GetDatum((int64) st.bytes_written);
	values[19] = Int64GetDatum((int64) st.deltas_written);
	values[20] = Int64GetDatum((int64) st.log_segments_removed);
	values[21] = Int64GetDatum((int64) (insert_lsn - Min(insert_lsn, st.last_start_lsn)));
	values[22] = Int64GetDatum((int64) fc_ckpt_calls_since_checkpoint());
	values[23] = CStringGetTextDatum(fc_checkpoint_policy == FC_POLICY_ADAPTIVE ? "adaptive" : "fixed");
	values[24] = CStringGetTextDatum(fc_checkpoint_method == FC_CKPT_COPY ? "copy" : "merge");
	values[25] = Int64GetDatum((int64) st.threshold_bytes);
	values[26] = Float8GetDatum(st.load);
	values[27] = Float8GetDatum(st.commit_rate);
	values[28] = CStringGetTextDatum(st.last_error);
	nulls[28] = (st.last_error[0] == '\0');
	for (int i = 1; i < FC_PAUSE_POINTS; i++)
		hits[i - 1] = Int64GetDatum((int64) st.pause_hits[i]);
	values[29] = PointerGetDatum(construct_array(hits, FC_PAUSE_POINTS - 1, INT8OID, 8,
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
fastckpt_stat_reset(PG_FUNCTION_ARGS)
{
	fc_log_stats_reset();
	fc_procs_stats_reset();
	PG_RETURN_VOID();
}
