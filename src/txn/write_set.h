/*-------------------------------------------------------------------------
 *
 * write_set.h
 *	  The slots a transaction wrote: installed into the Ping-Pong shadow
 *	  images at commit, rolled back on abort.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_WRITE_SET_H
#define FC_WRITE_SET_H

#include "postgres.h"

#include "access/xlogdefs.h"
#include "nodes/lockoptions.h"
#include "nodes/pg_list.h"
#include "storage/relfilenode.h"
#include "store/slot.h"

typedef enum FcWriteOp
{
	FC_OP_INSERT,
	FC_OP_UPDATE,				/* in place: an undo record was pushed */
	FC_OP_DELETE				/* xmax set (delete, or move to a new slot) */
} FcWriteOp;

typedef struct FcWrite
{
	FcTable    *tbl;
	uint64		generation;		/* the table's, when written */
	uint64		slotno;
	TransactionId xid;			/* (sub)transaction that wrote */
	TransactionId replaced_xmin;	/* creator of the version this write
									 * replaced (update, delete); invalid for
									 * an insert */
	int			nestlevel;
	FcWriteOp	op;
} FcWrite;

/*
 * Does this write go to the log?  Not if its storage went away since (a
 * TRUNCATE or DROP in the same transaction), nor for a temporary table.
 */
static inline bool
fc_write_is_logged(const FcWrite *w)
{
	return w->tbl->generation == w->generation && !w->tbl->is_temp;
}

extern void fc_write_set_add(FcTable *tbl, uint64 slotno, FcWriteOp op,
							 TransactionId xid, TransactionId replaced_xmin);
extern void fc_write_set_forget_insert(FcTable *tbl, uint64 slotno);

/* ---- locked_rows.c ---- */

typedef struct FcLockedRow
{
	FcTable    *tbl;
	uint64		generation;		/* the table's, when locked */
	uint64		slotno;
} FcLockedRow;

typedef void (*fc_locked_row_fn) (FcTable *tbl, uint64 slotno, void *arg);

extern void fc_locked_rows_note(FcTable *tbl, uint64 slotno);
extern bool fc_locked_rows_exist(void);
extern void fc_locked_rows_reset(void);
extern void fc_locked_rows_foreach(fc_locked_row_fn fn, void *arg);

/* ---- prepare_locks.c ---- */

extern void fc_prepare_check_table_locks(void);

/* ---- sequence_flush.c ---- */

extern void fc_flush_used_sequences(void);
extern void fc_note_session_sequences(void);
extern void fc_note_aborted_sequences(void);
extern bool fc_write_set_has_subxact_writes(void);
extern bool fc_write_set_has_logged_writes(void);
extern int	fc_write_set_size(void);
extern FcWrite *fc_write_set_get(int i);
extern bool fc_install_slot(FcTable *tbl, uint64 slotno, uint64 phase);
extern uint64 fc_write_set_install_digest(uint64 phase, uint32 *nwritten);
extern void fc_write_set_installed(uint64 phase);
extern void fc_count_live_rows(void);
extern bool fc_write_starts_run(int i);

/* commit.c: logging and durability of a committing transaction */
extern void fc_commit_pre_commit(void);
extern void fc_commit_at_abort(void);
extern void fc_commit_at_end(void);
extern void fc_commit_wait_reads(void);
extern void fc_commit_require_checkpoint(void);
extern void fc_commit_checkpoint_for_calls(bool before_statement);
extern void fc_commit_check_closed_database(void);
extern void fc_commit_register_callbacks(void);
extern void fc_note_read_stamp(uint64 stamp);
extern void fc_wait_read_durable_slow(void);
extern uint64 fc_read_wait_lsn;

/* client_output.c: no put-off read reaches the client before it is durable */
extern void fc_client_output_guard(bool all_output);
extern void fc_client_output_disarm(void);

/* Returning rows: first make sure their commits are durable (section 5). */
static inline void
fc_wait_read_durable(void)
{
	if (unlikely(fc_read_wait_lsn != 0))
		fc_wait_read_durable_slow();
}

/* Current Ping-Pong phase (shared; the word lives in recovery/gate.c). */
extern uint64 fc_pp_phase(void);
extern uint64 *fc_pp_phase_ptr(void);

/* pending_drop.c: table storages to drop at commit or at abort */
extern void fc_pending_drop_add(const RelFileNode *rnode, bool at_commit,
								bool is_temp);
extern void fc_pending_drop_table(const RelFileNode *rnode, bool is_temp);
extern void fc_pending_drop_database(Oid dbid);
extern void fc_pending_drops_at_xact_end(bool commit);
extern void fc_pending_drops_at_subxact_end(bool commit, int nestlevel);
extern List *fc_pending_storage_changes(void);
extern const RelFileNode *fc_pending_change_rnode(void *change, bool *is_drop);
extern bool fc_pending_changes_exist(void);
extern void fc_abort_flush_created_files(void);
extern XLogRecPtr fc_wal_records_end(void);
extern bool fc_pending_drops_exist(void);

#endif							/* FC_WRITE_SET_H */
