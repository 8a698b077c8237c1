/*-------------------------------------------------------------------------
 *
 * fastckpt_am.h
 *	  Declarations shared by the files of the fastckpt table access method.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_FASTCKPT_AM_H
#define FC_FASTCKPT_AM_H

#include "postgres.h"

#include "access/relscan.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "store/slot.h"
#include "utils/snapshot.h"

/* ---- handler.c ---- */

extern const struct TableAmRoutine *fc_table_am_routine(void);

/* ---- visibility.c ---- */

/* The version of a row that a snapshot sees. */
typedef struct FcVisible
{
	const char *data;
	uint32		len;
	TransactionId xmin;
	CommandId	cmin;
	TransactionId xmax;			/* deleter of this version, if any */
	TransactionId locker;		/* row lock(s) on the live version, if any */
	bool		locker_is_multi;	/* ... as a MultiXactId */
	bool		is_live;		/* the slot's live version (not undo) */
	uint64		stamp;			/* log position of the slot's last commit */
} FcVisible;

extern TransactionId fc_row_lockers(TransactionId xlock, uint16 xlock_info, bool *is_multi);

/* Caller holds the slot latch (shared is enough; hints are racy-safe). */
extern bool fc_visible_version(FcSlotHeader *hdr, const char *live,
							   Snapshot snapshot, FcVisible *out);
extern bool fc_latest_version(FcSlotHeader *hdr, const char *live, FcVisible *out);
extern void fc_live_version(FcSlotHeader *hdr, const char *live, FcVisible *out);
extern bool fc_version_replaced_by_own_update(FcSlotHeader *hdr, FcUndo *undo,
											  CommandId cid, FcVisible *out);
extern bool fc_xmin_visible_mvcc(TransactionId xmin, CommandId cmin,
								 uint16 *flags, Snapshot snapshot);
extern bool fc_xmin_committed(TransactionId xmin, uint16 *flags);
extern bool fc_xmin_aborted(TransactionId xmin, uint16 *flags);
extern bool fc_xmax_committed(FcSlotHeader *hdr);
extern bool fc_xmax_live(FcSlotHeader *hdr);
extern bool fc_xmax_running(FcSlotHeader *hdr);
extern bool fc_slot_dead_to_all(FcSlotHeader *hdr, struct GlobalVisState *vistest);
extern bool fc_slot_recently_dead(FcSlotHeader *hdr);

/* ---- tuple_io.c ---- */

extern const TupleTableSlotOps *fc_slot_callbacks(Relation rel);
extern void fc_store_version(TupleTableSlot *slot, Relation rel, uint64 slotno,
							 const FcVisible *v);
extern void fc_store_version_buffered(TupleTableSlot *slot, Relation rel,
									  uint64 slotno, const FcVisible *v,
									  HeapTuple *buffer, uint32 *buffer_capacity,
									  uint32 capacity);
extern HeapTuple fc_form_image(Relation rel, FcTable *tbl, TupleTableSlot *slot);
extern void fc_set_system_columns(HeapTupleHeader td, TransactionId xmin, CommandId cmin,
								  TransactionId xmax, TransactionId locker,
								  bool locker_is_multi);

/* ---- scan.c ---- */

typedef struct FcScanDesc
{
	TableScanDescData base;
	FcTable    *tbl;
	uint64		next_slot;		/* range start (parallel: next slot) */
	uint64		end_slot;		/* first slot past the range */
	int64		cur;			/* serial scans: slot last returned */
	bool		started;		/* serial scans: cur is meaningful */
	/* bitmap scans */
	struct TBMIterateResult *tbmres;
	int			tbm_index;
	uint64		tbm_block_start;	/* and sample scans': the block's first slot */
	/* analyze / sample */
	BlockNumber cur_block;
	BlockNumber sample_nblocks;	/* sample scans: blocks when the scan began */
	bool		parallel_block_valid;
	struct ParallelBlockTableScanWorkerData *pwork;	/* parallel scans */
	TupleTableSlot *buf_slot;	/* the slot rows are returned into */
	HeapTuple	buf;			/* reused for each of them */
	uint32		buf_cap;
} FcScanDesc;

extern TableScanDesc fc_scan_begin(Relation rel, Snapshot snapshot, int nkeys,
								   struct ScanKeyData *key,
								   ParallelTableScanDesc pscan, uint32 flags);
extern void fc_scan_end(TableScanDesc scan);
extern void fc_scan_rescan(TableScanDesc scan, struct ScanKeyData *key,
						   bool set_params, bool allow_strat, bool allow_sync,
						   bool allow_pagemode);
extern bool fc_scan_getnextslot(TableScanDesc scan, ScanDirection direction,
								TupleTableSlot *slot);
extern void fc_scan_set_tidrange(TableScanDesc scan, ItemPointer mintid,
								 ItemPointer maxtid);
extern bool fc_scan_getnextslot_tidrange(TableScanDesc scan,
										 ScanDirection direction,
										 TupleTableSlot *slot);
extern bool fc_scan_bitmap_next_block(TableScanDesc scan,
									  struct TBMIterateResult *tbmres);
extern bool fc_scan_bitmap_next_tuple(TableScanDesc scan,
									  struct TBMIterateResult *tbmres,
									  TupleTableSlot *slot);
extern bool fc_scan_sample_next_block(TableScanDesc scan,
									  struct SampleScanState *scanstate);
extern bool fc_scan_sample_next_tuple(TableScanDesc scan,
									  struct SampleScanState *scanstate,
									  TupleTableSlot *slot);
extern bool fc_scan_analyze_next_block(TableScanDesc scan, BlockNumber blockno,
									   BufferAccessStrategy bstrategy);
extern bool fc_scan_analyze_next_tuple(TableScanDesc scan,
									   TransactionId OldestXmin,
									   double *liverows, double *deadrows,
									   TupleTableSlot *slot);
extern bool fc_parallel_next_block(FcScanDesc *scan);
extern bool fc_fetch_slot_version(Relation rel, FcTable *tbl, uint64 slotno,
								  Snapshot snapshot, TupleTableSlot *slot);

/* ---- index_fetch.c ---- */

extern struct IndexFetchTableData *fc_index_fetch_begin(Relation rel);
extern void fc_index_fetch_reset(struct IndexFetchTableData *scan);
extern void fc_index_fetch_end(struct IndexFetchTableData *scan);
extern bool fc_index_fetch_tuple(struct IndexFetchTableData *scan,
								 ItemPointer tid, Snapshot snapshot,
								 TupleTableSlot *slot, bool *call_again,
								 bool *all_dead);
extern bool fc_tuple_fetch_row_version(Relation rel, ItemPointer tid,
									   Snapshot snapshot, TupleTableSlot *slot);
extern bool fc_tuple_tid_valid(TableScanDesc scan, ItemPointer tid);
extern void fc_tuple_get_latest_tid(TableScanDesc scan, ItemPointer tid);
extern bool fc_tuple_satisfies_snapshot(Relation rel, TupleTableSlot *slot,
										Snapshot snapshot);
extern TransactionId fc_index_delete_tuples(Relation rel,
											TM_IndexDeleteOp *delstate);

/* ---- ssi.c ---- */

extern void fc_ssi_read_slot(Relation rel, uint64 slotno, FcSlotHeader *hdr,
							 const FcVisible *v, Snapshot snapshot);
extern void fc_ssi_check_write(Relation rel, ItemPointer tid);

/* Reads call this with the slot latch held; v is NULL if none is visible. */
static inline void
fc_ssi_read(Relation rel, uint64 slotno, FcSlotHeader *hdr, const FcVisible *v,
			Snapshot snapshot)
{
	if (unlikely(IsolationIsSerializable()))
		fc_ssi_read_slot(rel, slotno, hdr, v, snapshot);
}

/* After a row was updated or deleted (tid), or inserted (tid NULL). */
static inline void
fc_ssi_wrote(Relation rel, ItemPointer tid)
{
	if (unlikely(IsolationIsSerializable()))
		fc_ssi_check_write(rel, tid);
}

/* ---- ddl.c ---- */

extern uint32 fc_resize_capacity;
extern bool fc_alter_table_running;
extern Oid	fc_rewritten_table(const char *name, Oid namespace);
extern Oid	fc_rewrite_source(Relation rel);
extern char *fc_table_name_for_message(Oid relid);

/* ---- old_table_ancestors.c ---- */

extern bool fc_ancestor_captures_old_rows(Relation rel);

/* ---- modify.c ---- */

extern void fc_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
							int options, struct BulkInsertStateData *bistate);
extern void fc_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
										CommandId cid, int options,
										struct BulkInsertStateData *bistate,
										uint32 specToken);
extern void fc_tuple_complete_speculative(Relation rel, TupleTableSlot *slot,
										  uint32 specToken, bool succeeded);
extern void fc_multi_insert(Relation rel, TupleTableSlot **slots, int nslots,
							CommandId cid, int options,
							struct BulkInsertStateData *bistate);
extern TM_Result fc_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
								 Snapshot snapshot, Snapshot crosscheck,
								 bool wait, TM_FailureData *tmfd,
								 bool changingPart);
extern TM_Result fc_tuple_update(Relation rel, ItemPointer otid,
								 TupleTableSlot *slot, CommandId cid,
								 Snapshot snapshot, Snapshot crosscheck,
								 bool wait, TM_FailureData *tmfd,
								 LockTupleMode *lockmode,
								 bool *update_indexes);
extern void fc_finish_bulk_insert(Relation rel, int options);
extern uint64 fc_insert_row(Relation rel, FcTable *tbl, HeapTuple tuple,
							TransactionId xid, CommandId cid, uint16 extra_flags,
							uint32 spec_token, uint16 moved_from);

/* ---- tid_versions.c ---- */

extern void fc_note_replaced_row(Relation rel, ItemPointer tid, CommandId cid,
								 FcUndo *undo);
extern void fc_forget_replaced_row(void);
extern FcUndo *fc_take_replaced_row(Relation rel, ItemPointer tid, CommandId *cid);
extern void fc_note_probed_row(Relation rel, ItemPointer tid, TransactionId xmin,
							   CommandId cmin);
extern bool fc_take_probed_row(Relation rel, ItemPointer tid, TransactionId xmin,
							   CommandId cmin);
extern void fc_forget_probed_row(void);
struct QueryDesc;
extern void fc_probes_statement_start(struct QueryDesc *qd);
extern void fc_probes_statement_end(struct QueryDesc *qd);
extern bool fc_probes_wanted(Relation rel);
extern void fc_tid_notes_at_subxact_start(int level);
extern void fc_tid_notes_at_abort(int level);
extern void fc_tid_notes_at_xact_end(void);

/* ---- row_lock.c ---- */

extern TM_Result fc_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
							   TupleTableSlot *slot, CommandId cid,
							   LockTupleMode mode, LockWaitPolicy wait_policy,
							   uint8 flags, TM_FailureData *tmfd);

/* What a writer or locker found when it looked at a row's latest state. */
typedef enum FcRowCheck
{
	FC_ROW_OK,					/* caller may proceed */
	FC_ROW_INVISIBLE,			/* inserted by a later command / other xact */
	FC_ROW_SELF_MODIFIED,		/* changed by a later command of ours */
	FC_ROW_UPDATED,				/* changed by a committed concurrent xact */
	FC_ROW_DELETED,				/* deleted by a committed concurrent xact */
	FC_ROW_WAIT					/* must wait for an in-progress xact */
} FcRowCheck;

typedef struct FcRowConflict
{
	TransactionId wait_xid;		/* FC_ROW_WAIT: whom to wait for */
	bool		wait_is_multi;
	TransactionId xmax;			/* for TM_FailureData */
	CommandId	cmax;
	ItemPointerData ctid;
	bool		traversed;		/* follow mode moved past the caller's version */
	bool		holds_lock;		/* FC_ROW_WAIT: our transaction locks the row already */
} FcRowConflict;

extern FcRowCheck fc_check_row(FcSlotHeader *hdr, uint64 slotno,
							   CommandId cid, Snapshot snapshot,
							   LockTupleMode mode, bool is_lock, bool follow,
							   FcRowConflict *conflict);
extern FcRowCheck fc_lock_latest_for_update(FcSlotHeader *hdr, uint64 slotno,
											CommandId cid, Snapshot snapshot,
											LockTupleMode mode,
											FcRowConflict *conflict);
extern TM_Result fc_row_check_to_tm(FcRowCheck check, FcRowConflict *conflict,
									TM_FailureData *tmfd);
extern bool fc_current_xact_holds_lock(FcSlotHeader *hdr, LockTupleMode mode);
extern bool fc_current_xact_lock(FcSlotHeader *hdr, LockTupleMode *mode);
extern void fc_restore_row_lock(FcSlotHeader *hdr, TransactionId xid, LockTupleMode mode);
extern bool fc_wait_for_conflict(Relation rel, ItemPointer tid,
								 FcRowConflict *conflict, LockTupleMode mode,
								 LockWaitPolicy policy, XLTW_Oper oper,
								 bool *have_tuple_lock);
extern LOCKMODE fc_tuple_lock_hwmode(LockTupleMode mode);
extern void fc_carry_lockers(FcSlotHeader *to, TransactionId xlock,
							 uint16 xlock_info);
extern void fc_release_tuple_lock(Relation rel, ItemPointer tid,
								  LockTupleMode mode, bool *have_tuple_lock);

/* ---- ddl.c ---- */

extern void fc_relation_set_new_filenode(Relation rel, const RelFileNode *newrnode,
										 char persistence,
										 TransactionId *freezeXid,
										 MultiXactId *minmulti);
extern void fc_relation_nontransactional_truncate(Relation rel);
extern void fc_relation_copy_data(Relation rel, const RelFileNode *newrnode);
extern FcTable *fc_storage_adopt(Relation rel);
extern void fc_storage_copy_database(Oid src_db, Oid src_spc, Oid dst_db,
									 Oid dst_spc);
extern int	fc_storage_count_used(Oid dbid, Oid spcid);
extern void fc_storage_drop_database_in(Oid dbid, Oid spcid);
extern void fc_relation_copy_for_cluster(Relation OldTable, Relation NewTable,
										 Relation OldIndex, bool use_sort,
										 TransactionId OldestXmin,
										 TransactionId *xid_cutoff,
										 MultiXactId *multi_cutoff,
										 double *num_tuples,
										 double *tups_vacuumed,
										 double *tups_recently_dead);
extern uint64 fc_relation_size(Relation rel, ForkNumber forkNumber);
extern bool fc_relation_needs_toast_table(Relation rel);
extern void fc_relation_estimate_size(Relation rel, int32 *attr_widths,
									  BlockNumber *pages, double *tuples,
									  double *allvisfrac);

/* ---- index_build.c ---- */

extern double fc_index_build_range_scan(Relation table_rel, Relation index_rel,
										struct IndexInfo *index_info,
										bool allow_sync, bool anyvisible,
										bool progress, BlockNumber start_blockno,
										BlockNumber numblocks,
										IndexBuildCallback callback,
										void *callback_state,
										TableScanDesc scan);
extern void fc_index_validate_scan(Relation table_rel, Relation index_rel,
								   struct IndexInfo *index_info,
								   Snapshot snapshot,
								   struct ValidateIndexState *state);

/* ---- vacuum.c ---- */

extern void fc_relation_vacuum(Relation rel, struct VacuumParams *params,
							   BufferAccessStrategy bstrategy);

/* ---- utility.c ---- */

extern bool fc_relid_is_fastckpt(Oid relid);

/* ---- relid_cache.c ---- */

extern struct HTAB *fc_relid_cache_create(const char *name, Size entrysize);

/* ---- access gate (recovery/gate.c) ---- */

extern void fc_gate_wait(Relation rel);
extern void fc_gate_wait_for(const char *what);
extern void fc_gate_check_snapshot(Relation rel, Snapshot snapshot);
extern void fc_gate_wait_quietly(void);
extern void fc_gate_check_held_locks(void);

/* storage_options.c: a table's slot sizing parameters */
typedef struct FcSizingOptions
{
	int			row_size;		/* fastckpt_row_size; -1: not given */
	int			bytes_per_char; /* fastckpt_bytes_per_char; -1: not given */
	bool		reset_row_size; /* ALTER TABLE ... RESET */
	bool		reset_bytes_per_char;
} FcSizingOptions;

extern const FcSizingOptions *fc_statement_sizing;
extern void fc_sizing_options_init(FcSizingOptions *opts);
extern bool fc_take_sizing_options(List **options, bool is_reset, FcSizingOptions *opts);
extern bool fc_relation_sizing_options(Oid relid, FcSizingOptions *opts);
extern void fc_hide_sizing_options(Oid relid);
extern void fc_record_sizing_options(Oid relid, const FcSizingOptions *given);
extern void fc_sizing_options_after_alter(Oid relid, const FcSizingOptions *before,
										  const FcSizingOptions *change);
extern uint32 fc_row_image_capacity(Relation rel, bool *exact);
extern uint32 fc_row_image_need(Relation rel);
extern uint32 fc_alter_row_target(Oid relid, Relation newrel);

/* what a CREATE or ALTER TABLE does to them */
typedef struct FcSizingChange
{
	bool		active;			/* a CREATE, or an ALTER of a table */
	bool		given;			/* it names sizing parameters (change) */
	bool		existed;		/* CREATE ... IF NOT EXISTS of an existing one */
	bool		was_fastckpt;	/* ALTER: the table was a fastckpt table */
	Oid			relid;			/* ALTER: the table */
	FcSizingOptions before;		/* ALTER: its parameters before */
	FcSizingOptions change;
} FcSizingChange;

extern bool fc_is_fastckpt_name(const char *am);
extern void fc_sizing_before_create(List **options, RangeVar *relation, FcSizingChange *sc);
extern void fc_sizing_before_alter(AlterTableStmt *stmt, FcSizingChange *sc);
extern void fc_sizing_after(Node *parsetree, Oid created, FcSizingChange *sc);

#endif							/* FC_FASTCKPT_AM_H */
