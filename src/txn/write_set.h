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

#include "store/slot.h"

typedef enum FcWriteOp
{
	FC_OP_INSERT,
	FC_OP_UPDATE,				/* in place: an undo record was pushed */
	FC_OP_DELETE				/* xmax set (delete, or move to a new slot) */
} FcWriteOp;

extern void fc_write_set_add(FcTable *tbl, uint64 slotno, FcWriteOp op,
							 TransactionId xid);

/* Current Ping-Pong phase (shared; the word lives in recovery/gate.c). */
extern uint64 fc_pp_phase(void);
extern uint64 *fc_pp_phase_ptr(void);

/* pending_drop.c: table storages to drop at commit or at abort */
extern void fc_pending_drop_add(const RelFileNode *rnode, bool at_commit);
extern void fc_pending_drop_database(Oid dbid);
extern void fc_pending_drops_at_xact_end(bool commit);
extern void fc_pending_drops_at_subxact_end(bool commit, int nestlevel);

#endif							/* FC_WRITE_SET_H */
