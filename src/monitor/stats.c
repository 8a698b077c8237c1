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
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "store/arena.h"
#include "store/table_store.h"
#include "txn/write_set.h"

PG_FUNCTION_INFO_V1(fastckpt_stat_memory_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_tables_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_recovery_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_log_internal);
PG_FUNCTION_INFO_V1(fastckpt_stat_reset);

Datum
fastckpt_stat_memory_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcArenaStats stats;
	Datum		values[7];
	bool		nulls[7] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
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
} FcTableRow;

typedef struct FcTableRows
{
	FcTableRow *rows;
	int			n;
	int			cap;
	uint64		phase;
} FcTableRows;

/*
 * Count rows and dirty shadow images by looking at every slot: the views
 * are rare, and counting in the commit path would cost every transaction.
 */
static void
fc_collect_table(FcTable *tbl, void *arg)
{
	FcTableRows *out = (FcTableRows *) arg;
	FcTableRow *r;
	uint64		nslots = fc_table_nslots(tbl);
	uint32		cur = fc_pp_current_image(out->phase);

	if (out->n == out->cap)
	{
		out->cap *= 2;
		out->rows = repalloc(out->rows, out->cap * sizeof(FcTableRow));
	}
	r = &out->rows[out->n++];
	memset(r, 0, sizeof(FcTableRow));
	r->dbid = tbl->key.dbid;
	r->spcid = tbl->key.spcid;
	r->relnode = tbl->key.relnode;
	for (uint64 s = 0; s < nslots; s++)
	{
		FcSlotHeader *hdr = fc_slot_header(tbl, s);
		LWLock	   *lock = fc_slot_lock(tbl, s);

		LWLockAcquire(lock, LW_SHARED);
		if (hdr->marks.state[cur] != FC_PP_CLEAN)
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
	r->slots_allocated = (int64) tbl->npages * tbl->slots_per_page;
	r->slot_bytes = tbl->layout.stride;
	r->image_bytes = tbl->layout.image_capacity;
	r->undo_records = tbl->undo_live;
	r->undo_bytes = (int64) tbl->undo_pages * FC_PAGE_SIZE;
	r->memory_bytes = (int64) (tbl->npages + tbl->ndir_pages) * FC_PAGE_SIZE + r->undo_bytes;
}

Datum
fastckpt_stat_tables_internal(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FcTableRows rows;

	InitMaterializedSRF(fcinfo, 0);
	rows.cap = 16;
	rows.n = 0;
	rows.rows = palloc(rows.cap * sizeof(FcTableRow));
	rows.phase = fc_pp_phase();
	fc_table_foreach(fc_collect_table, &rows);

	for (int i = 0; i < rows.n; i++)
	{
		FcTableRow *r = &rows.rows[i];
		Datum		values[13];
		bool		nulls[13] = {0};

		values[0] = ObjectIdGetDatum(r->dbid);
		values[1] = ObjectIdGetDatum(r->spcid);
		values[2] = ObjectIdGetDatum(r->relnode);
		values[3] = Int64GetDatum(r->rows);
		values[4] = Int64GetDatum(r->dead_rows);
		values[5] = Int64GetDatum(r->slots_used);
		values[6] = Int64GetDatum(r->slots_allocated);
		values[7] = Int64GetDatum(r->slot_bytes);
		values[8] = Int64GetDatum(r->image_bytes);
		values[9] = Int64GetDatum(r->memory_bytes);
		values[10] = Int64GetDatum(r->undo_records);
		values[11] = Int64GetDatum(r->undo_bytes);
		values[12] = Int64GetDatum(r->dirty_rows);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
fastckpt_stat_recovery_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcRecoveryStats stats;
	Datum		values[15];
	bool		nulls[15] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	fc_recovery_stats_get(&stats);
	values[0] = BoolGetDatum(fc_gate_is_open());
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
	values[12] = Float8GetDatum(stats.replay_seconds);
	values[13] = Float8GetDatum(stats.index_rebuild_seconds);
	values[14] = Float8GetDatum(stats.total_seconds);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
fastckpt_stat_log_internal(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	FcLogStats	stats;
	uint64		commits;
	Datum		values[17];
	bool		nulls[17] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
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
	values[8] = Float8GetDatum(stats.flushes > 0 ? (double) commits / stats.flushes : 0.0);
	values[9] = Float8GetDatum(commits > 0 ? (double) stats.bytes / commits : 0.0);
	values[10] = Int64GetDatum((int64) stats.commit_waits);
	values[11] = Float8GetDatum((double) stats.commit_wait_us / 1000.0);
	values[12] = Float8GetDatum(stats.commit_waits > 0 ?
								(double) stats.commit_wait_us / 1000.0 / stats.commit_waits : 0.0);
	values[13] = Int64GetDatum((int64) stats.buffer_full_waits);
	values[14] = Int64GetDatum((int64) stats.write_errors);
	values[15] = BoolGetDatum(stats.failing);
	values[16] = CStringGetTextDatum(stats.last_error);
	nulls[16] = (stats.last_error[0] == '\0');
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
fastckpt_stat_reset(PG_FUNCTION_ARGS)
{
	fc_log_stats_reset();
	PG_RETURN_VOID();
}
