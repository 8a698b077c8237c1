/*-------------------------------------------------------------------------
 *
 * prepared.h
 *	  Two-phase commit of transactions that wrote or locked fastckpt rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_PREPARED_H
#define FC_PREPARED_H

#include "postgres.h"

#include "core/prepared_format.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "store/slot.h"

/* A slot a prepared transaction changed, and how (FC_PREP_*). */
typedef struct FcPreparedRef
{
	FcTable    *tbl;
	uint64		slotno;
	uint8		op;
} FcPreparedRef;

extern Size fc_prepared_shmem_size(void);
extern void fc_prepared_shmem_init(void);

/* PREPARE TRANSACTION */
extern void fc_prepared_note_gid(const char *gid);
extern bool fc_prepared_wait_for_tables(const char *gid, bool commit);
extern void fc_prepared_pre_prepare(void);
extern void fc_prepared_at_prepare(void);
extern void fc_prepared_at_abort(void);

/* COMMIT PREPARED / ROLLBACK PREPARED: run does PostgreSQL's part */
typedef void (*fc_prepared_run_fn) (void *arg);
extern void fc_prepared_finish(const char *gid, bool commit,
							   fc_prepared_run_fn run, void *arg);

/*
 * commit.c: install and log the rows of COMMIT PREPARED, and wait for the
 * log; *installed_phase is set once they are installed.
 */
extern void fc_commit_log_prepared(const FcPreparedRef *refs, int nrefs,
								   uint64 fxid, TransactionId xid,
								   uint64 *installed_phase);
extern void fc_commit_make_xid_durable(void);

/* startup recovery: rows of transactions still prepared */
extern bool fc_prepared_restore(List **reindex_dbs, int *restored,
								char *error, size_t errlen);

extern FcTable *fc_prepared_entry_table(const fc_prepared_header *hdr,
										const fc_prepared_slot *s);

/* registry of prepared transactions (and PREPAREs at work) */
extern bool fc_prepared_any_registered(void);
extern bool fc_prepared_xid_registered(TransactionId xid);

/* prepared_row_locks.c */
extern void fc_prepared_add_lock_entries(StringInfo buf, uint32 *nentries);
extern bool fc_prepared_lock_pins_row(FcSlotHeader *hdr, TransactionId *wait_xid);
extern void fc_prepared_restore_locks(const fc_prepared_header *hdr, uint32 *nlocks);

#endif							/* FC_PREPARED_H */
