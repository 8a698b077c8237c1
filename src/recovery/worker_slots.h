/*-------------------------------------------------------------------------
 *
 * worker_slots.h
 *	  Waiting for a background worker slot startup recovery needs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_WORKER_SLOTS_H
#define FC_WORKER_SLOTS_H

#include "datatype/timestamp.h"

typedef struct FcSlotWait
{
	TimestampTz since;			/* first failed attempt, or 0 */
	TimestampTz freed_at;		/* last worker terminated for a slot, or 0 */
} FcSlotWait;

extern void fc_worker_slot_wait(FcSlotWait *wait, const char *purpose);

#endif							/* FC_WORKER_SLOTS_H */
