/*-------------------------------------------------------------------------
 *
 * read_set.h
 *	  What a registered call read, validated at its commit (DESIGN.md
 *	  section 6, Silo-style): replaying the call in commit order repeats
 *	  its writes only if everything it read was still current when it
 *	  committed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_READ_SET_H
#define FC_READ_SET_H

#include "postgres.h"

#include "access/fastckpt_am.h"
#include "store/slot.h"
#include "utils/snapshot.h"

/* true while a registered call executes and has not been ruled out */
extern bool fc_read_set_active;

extern void fc_read_set_begin(void);
extern void fc_read_set_reset(void);

/* A fetch looked at a slot (latch held); v is what it returned, or NULL. */
extern void fc_read_note_row_slow(FcTable *tbl, uint64 slotno, FcSlotHeader *hdr,
								  const FcVisible *v, Snapshot snapshot);

extern void fc_read_statement_start(const void *stmt, bool epq_exact);
extern void fc_read_statement_end(const void *stmt);
extern void fc_read_follow_row(FcTable *tbl, uint64 slotno, FcSlotHeader *hdr,
							   TransactionId scan_xmin, const FcVisible *locked);

/* The reader may have missed rows: every change to the table matters. */
typedef struct FcTableReadMark
{
	uint64		count;			/* tbl->write_count */
} FcTableReadMark;

extern void fc_read_mark(FcTable *tbl, FcTableReadMark *mark);
extern void fc_read_note_table_at(FcTable *tbl, const FcTableReadMark *mark);
extern void fc_read_note_table(FcTable *tbl);

/* At commit, after the CSN is taken: is every read still current? */
extern bool fc_read_set_validate(void);

static inline void
fc_read_note_row(FcTable *tbl, uint64 slotno, FcSlotHeader *hdr,
				 const FcVisible *v, Snapshot snapshot)
{
	if (unlikely(fc_read_set_active))
		fc_read_note_row_slow(tbl, slotno, hdr, v, snapshot);
}

#endif							/* FC_READ_SET_H */
