/*-------------------------------------------------------------------------
 *
 * undo.c
 *	  Undo versions: allocation from per-table pages, reclaim in FIFO order.
 *
 * An in-place update copies the replaced version into an undo record and
 * chains it from the slot.  Records are queued in the order of the updates
 * that created them, so reclaim only ever looks at the head of the queue:
 * once the head's superseding transaction is older than every snapshot, no
 * reader can reach the head any more.  Writers reclaim a few records after
 * each update, so undo memory stays bounded by the update rate times the
 * age of the oldest snapshot, independently of VACUUM.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

#include "recovery/gate.h"
#include "store/arena.h"
#include "store/undo.h"

void
fc_undo_init_table(FcTable *tbl)
{
	SpinLockInit(&tbl->undo_lock);
	tbl->undo_record_size = MAXALIGN(FC_UNDO_HEADER_SIZE + tbl->layout.image_capacity);
	tbl->undo_per_page = (FC_PAGE_SIZE - MAXALIGN(sizeof(char *))) / tbl->undo_record_size;
	tbl->undo_free = NULL;
	tbl->undo_fifo_head = tbl->undo_fifo_tail = NULL;
	tbl->undo_page_list = NULL;
	tbl->undo_pages = 0;
	tbl->undo_live = 0;
}

/* Give every undo page back; the caller owns the table exclusively. */
void
fc_undo_free_table(FcTable *tbl)
{
	char	   *page = tbl->undo_page_list;

	while (page != NULL)
	{
		char	   *next = *(char **) page;

		fc_arena_free_page(page, FC_PAGE_UNDO);
		page = next;
	}
	fc_undo_init_table(tbl);
}

FcUndo *
fc_undo_alloc(FcTable *tbl, Oid relid)
{
	FcUndo	   *undo;
	char	   *page;

	SpinLockAcquire(&tbl->undo_lock);
	undo = tbl->undo_free;
	if (undo != NULL)
	{
		tbl->undo_free = undo->prev;
		tbl->undo_live++;
		SpinLockRelease(&tbl->undo_lock);
		memset(undo, 0, FC_UNDO_HEADER_SIZE);
		return undo;
	}
	SpinLockRelease(&tbl->undo_lock);

	/* carve a new page into records; keep one, free-list the rest */
	page = fc_arena_alloc_page(FC_PAGE_UNDO, relid);
	SpinLockAcquire(&tbl->undo_lock);
	*(char **) page = tbl->undo_page_list;
	tbl->undo_page_list = page;
	tbl->undo_pages++;
	for (uint32 i = 1; i < tbl->undo_per_page; i++)
	{
		FcUndo	   *rec = (FcUndo *) (page + MAXALIGN(sizeof(char *)) +
									  (Size) i * tbl->undo_record_size);

		rec->prev = tbl->undo_free;
		tbl->undo_free = rec;
	}
	tbl->undo_live++;
	SpinLockRelease(&tbl->undo_lock);
	return (FcUndo *) (page + MAXALIGN(sizeof(char *)));
}

static void
fc_undo_free_locked(FcTable *tbl, FcUndo *undo)
{
	undo->prev = tbl->undo_free;
	tbl->undo_free = undo;
	tbl->undo_live--;
}

void
fc_undo_release_unused(FcTable *tbl, FcUndo *undo)
{
	SpinLockAcquire(&tbl->undo_lock);
	fc_undo_free_locked(tbl, undo);
	SpinLockRelease(&tbl->undo_lock);
}

void
fc_undo_enqueue(FcTable *tbl, FcUndo *undo)
{
	undo->fifo_next = NULL;
	SpinLockAcquire(&tbl->undo_lock);
	if (tbl->undo_fifo_tail != NULL)
		tbl->undo_fifo_tail->fifo_next = undo;
	else
		tbl->undo_fifo_head = undo;
	tbl->undo_fifo_tail = undo;
	SpinLockRelease(&tbl->undo_lock);
}

/*
 * Unlink a reclaimable record from its row's chain.  Everything older in
 * the chain was queued earlier and is already gone, so the record is the
 * chain's oldest: O(1) through its link to the next newer version, however
 * long a long-running snapshot let the chain grow.
 */
static void
fc_undo_unlink(FcTable *tbl, FcUndo *undo)
{
	LWLock	   *lock = fc_slot_lock(tbl, undo->slotno);

	LWLockAcquire(lock, LW_EXCLUSIVE);
	/* a record rolled back, or whose row was freed, is no longer linked */
	if (!(undo->flags & FC_UNDO_DETACHED))
	{
		if (undo->newer != NULL)
			undo->newer->prev = undo->prev;
		else
			fc_slot_header(tbl, undo->slotno)->undo = undo->prev;
		if (undo->prev != NULL)
			undo->prev->newer = undo->newer;
	}
	LWLockRelease(lock);
}

/*
 * Put a new version at the head of a slot's chain; slot latch held
 * exclusively.
 */
void
fc_undo_push(FcSlotHeader *hdr, FcUndo *undo)
{
	undo->prev = hdr->undo;
	undo->newer = NULL;
	if (undo->prev != NULL)
		undo->prev->newer = undo;
	hdr->undo = undo;
}

void
fc_undo_push_live(FcTable *tbl, char *sp, uint64 slotno, FcUndo *undo,
				  TransactionId superseded_by)
{
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	memcpy(undo->data, fc_pp_live(sp, &tbl->layout), hdr->live_len);
	undo->len = hdr->live_len;
	undo->xmin = hdr->xmin;
	undo->cmin = hdr->cmin;
	undo->flags = hdr->flags & FC_XMIN_HINTS;
	undo->superseded_by = superseded_by;
	undo->slotno = slotno;
	fc_undo_push(hdr, undo);
}

void
fc_undo_pop_to_live(FcTable *tbl, char *sp)
{
	FcSlotHeader *hdr = (FcSlotHeader *) sp;
	FcUndo	   *undo = fc_undo_pop(hdr);

	memcpy(fc_pp_live(sp, &tbl->layout), undo->data, undo->len);
	hdr->live_len = undo->len;
	hdr->xmin = undo->xmin;
	hdr->cmin = undo->cmin;
	hdr->flags = (hdr->flags & ~FC_XMIN_HINTS) | (undo->flags & FC_XMIN_HINTS);
}

/* Take the head of a slot's chain off (rollback); latch held exclusively. */
FcUndo *
fc_undo_pop(FcSlotHeader *hdr)
{
	FcUndo	   *undo = hdr->undo;

	hdr->undo = undo->prev;
	if (undo->prev != NULL)
		undo->prev->newer = NULL;
	undo->flags |= FC_UNDO_DETACHED;
	return undo;
}

/*
 * Detach a whole chain (its slot is being freed); the FIFO frees the
 * records later.  Latch held exclusively, or the table owned exclusively.
 */
void
fc_undo_detach_chain(FcSlotHeader *hdr)
{
	for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
		u->flags |= FC_UNDO_DETACHED;
	hdr->undo = NULL;
}

int
fc_undo_reclaim(FcTable *tbl, GlobalVisState *vistest, int max_records)
{
	int			done = 0;

	/*
	 * Startup recovery replays calls one after another, and no one else
	 * reads fastckpt rows before the gate opens: a session waiting there
	 * may hold a snapshot, but one that predates a replayed call is refused
	 * when it reads (fc_gate_check_snapshot).  So an old version whose
	 * superseder committed is needed by no one, and the waiters' xmin must
	 * not keep it: replay would fill the arena with undo.
	 */
	bool		replaying = fc_in_recovery_worker && !fc_gate_is_open();

	while (done < max_records)
	{
		FcUndo	   *head;
		uint16		flags;
		TransactionId superseded_by;

		SpinLockAcquire(&tbl->undo_lock);
		head = tbl->undo_fifo_head;
		if (head == NULL)
		{
			SpinLockRelease(&tbl->undo_lock);
			break;
		}
		flags = head->flags;
		superseded_by = head->superseded_by;
		SpinLockRelease(&tbl->undo_lock);

		/*
		 * An aborted superseder is older than every snapshot as soon as it
		 * has aborted, but its backend still needs the record to restore
		 * the row: wait for it to be detached instead.
		 */
		if (!(flags & FC_UNDO_DETACHED) &&
			((replaying ? TransactionIdIsInProgress(superseded_by) :
			  !GlobalVisTestIsRemovableXid(vistest, superseded_by)) ||
			 !TransactionIdDidCommit(superseded_by)))
			break;

		SpinLockAcquire(&tbl->undo_lock);
		if (tbl->undo_fifo_head != head)
		{
			SpinLockRelease(&tbl->undo_lock);
			continue;
		}
		/* claim it: off the queue, so no one else reclaims it */
		tbl->undo_fifo_head = head->fifo_next;
		if (tbl->undo_fifo_head == NULL)
			tbl->undo_fifo_tail = NULL;
		SpinLockRelease(&tbl->undo_lock);

		fc_undo_unlink(tbl, head);

		SpinLockAcquire(&tbl->undo_lock);
		fc_undo_free_locked(tbl, head);
		SpinLockRelease(&tbl->undo_lock);
		done++;
	}
	return done;
}
