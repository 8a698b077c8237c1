/*-------------------------------------------------------------------------
 *
 * handler.c
 *	  The fastckpt TableAmRoutine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "fmgr.h"

#include "access/fastckpt_am.h"

PG_FUNCTION_INFO_V1(fastckpt_tableam_handler);

static Size
fc_parallelscan_estimate(Relation rel)
{
	return table_block_parallelscan_estimate(rel);
}

static Size
fc_parallelscan_initialize(Relation rel, ParallelTableScanDesc pscan)
{
	return table_block_parallelscan_initialize(rel, pscan);
}

static void
fc_parallelscan_reinitialize(Relation rel, ParallelTableScanDesc pscan)
{
	table_block_parallelscan_reinitialize(rel, pscan);
}

static const TableAmRoutine fastckpt_methods = {
	.type = T_TableAmRoutine,

	.slot_callbacks = fc_slot_callbacks,

	.scan_begin = fc_scan_begin,
	.scan_end = fc_scan_end,
	.scan_rescan = fc_scan_rescan,
	.scan_getnextslot = fc_scan_getnextslot,

	.scan_set_tidrange = fc_scan_set_tidrange,
	.scan_getnextslot_tidrange = fc_scan_getnextslot_tidrange,

	.parallelscan_estimate = fc_parallelscan_estimate,
	.parallelscan_initialize = fc_parallelscan_initialize,
	.parallelscan_reinitialize = fc_parallelscan_reinitialize,

	.index_fetch_begin = fc_index_fetch_begin,
	.index_fetch_reset = fc_index_fetch_reset,
	.index_fetch_end = fc_index_fetch_end,
	.index_fetch_tuple = fc_index_fetch_tuple,

	.tuple_fetch_row_version = fc_tuple_fetch_row_version,
	.tuple_tid_valid = fc_tuple_tid_valid,
	.tuple_get_latest_tid = fc_tuple_get_latest_tid,
	.tuple_satisfies_snapshot = fc_tuple_satisfies_snapshot,
	.index_delete_tuples = fc_index_delete_tuples,

	.tuple_insert = fc_tuple_insert,
	.tuple_insert_speculative = fc_tuple_insert_speculative,
	.tuple_complete_speculative = fc_tuple_complete_speculative,
	.multi_insert = fc_multi_insert,
	.tuple_delete = fc_tuple_delete,
	.tuple_update = fc_tuple_update,
	.tuple_lock = fc_tuple_lock,
	.finish_bulk_insert = fc_finish_bulk_insert,

	.relation_set_new_filenode = fc_relation_set_new_filenode,
	.relation_nontransactional_truncate = fc_relation_nontransactional_truncate,
	.relation_copy_data = fc_relation_copy_data,
	.relation_copy_for_cluster = fc_relation_copy_for_cluster,
	.relation_vacuum = fc_relation_vacuum,
	.scan_analyze_next_block = fc_scan_analyze_next_block,
	.scan_analyze_next_tuple = fc_scan_analyze_next_tuple,
	.index_build_range_scan = fc_index_build_range_scan,
	.index_validate_scan = fc_index_validate_scan,

	.relation_size = fc_relation_size,
	.relation_needs_toast_table = fc_relation_needs_toast_table,

	.relation_estimate_size = fc_relation_estimate_size,

	.scan_bitmap_next_block = fc_scan_bitmap_next_block,
	.scan_bitmap_next_tuple = fc_scan_bitmap_next_tuple,
	.scan_sample_next_block = fc_scan_sample_next_block,
	.scan_sample_next_tuple = fc_scan_sample_next_tuple,
};

Datum
fastckpt_tableam_handler(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(&fastckpt_methods);
}

/* For telling our tables apart by their rd_tableam. */
const TableAmRoutine *
fc_table_am_routine(void)
{
	return &fastckpt_methods;
}
