/*-------------------------------------------------------------------------
 *
 * undo.h
 *	  Old row versions kept for older snapshots, and their reclaim.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_UNDO_H
#define FC_UNDO_H

#include "postgres.h"

#include "store/slot.h"
#include "utils/snapshot.h"

extern void fc_undo_init_table(FcTable *tbl);
extern void fc_undo_free_table(FcTable *tbl);

/* A fresh record (not yet linked anywhere); may raise "memory full". */
extern FcUndo *fc_undo_alloc(FcTable *tbl, Oid relid);

/* Give back a record that was never linked into a chain. */
extern void fc_undo_release_unused(FcTable *tbl, FcUndo *undo);

/* Chain maintenance; the slot latch is held exclusively. */
extern void fc_undo_push(FcSlotHeader *hdr, FcUndo *undo);
extern FcUndo *fc_undo_pop(FcSlotHeader *hdr);
extern void fc_undo_detach_chain(FcSlotHeader *hdr);

/*
 * The live version of a slot becomes the head of its chain, superseded by
 * xid (an update in place); latch held exclusively.
 */
extern void fc_undo_push_live(FcTable *tbl, char *sp, uint64 slotno, FcUndo *undo,
							  TransactionId superseded_by);

/* Take the head of the chain back as the live version (rollback). */
extern void fc_undo_pop_to_live(FcTable *tbl, char *sp);

/* Queue a record that was linked into a row's chain for later reclaim. */
extern void fc_undo_enqueue(FcTable *tbl, FcUndo *undo);

/*
 * Reclaim up to max_records versions, oldest first, that no snapshot can
 * need any more according to vistest.  Returns the number reclaimed.
 * Must be called with no slot latch held.
 */
extern int	fc_undo_reclaim(FcTable *tbl, struct GlobalVisState *vistest,
							int max_records);

#endif							/* FC_UNDO_H */
