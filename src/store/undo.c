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
 * each update, and before taking a new page, so undo memory stays bounded
 * by the update rate times the age of the oldest snapshot, independently
 * of VACUUM; pages whose records are all free go back to the arena.
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
#include "store/temp_quota.h"
#include "store/undo.h"

/*
 * An undo page: records of one table, with a list of its free ones.  A
 * page whose records are all free goes back to the arena, but for one per
 * table kept for the next updates, so that the old versions one table
 * needed for a while (a long snapshot, a large UPDATE) do not keep memory
 * from every other table once reclaimed.
 */
typedef struct FcUndoPage
{
	dlist_node	node;			/* in the table's undo_page_list */
	dlist_node	partial_node;	/* in undo_partial while a record is free */
	FcUndo	   *free;			/* this page's free records */
	uint32		nfree;
} FcUndoPage;

#define FC_UNDO_PAGE_HEADER		MAXALIGN(sizeof(FcUndoPage))

/* Pages are FC_PAGE_SIZE-aligned in the arena, and records within them. */
static inline FcUndoPage *
fc_undo_page_of(FcUndo *undo)
{
	return (FcUndoPage *) TYPEALIGN_DOWN(FC_PAGE_SIZE, (uintptr_t) undo);
}

void
fc_undo_init_table(FcTable *tbl)
{
	SpinLockInit(&tbl->undo_lock);
	tbl->undo_record_size = MAXALIGN(FC_UNDO_HEADER_SIZE + tbl->layout.image_capacity);
	tbl->undo_per_page = (FC_PAGE_SIZE - FC_UNDO_PAGE_HEADER) / tbl->undo_record_size;
	dlist_init(&tbl->undo_partial);
	tbl->undo_fifo_head = tbl->undo_fifo_tail = NULL;
	dlist_init(&tbl->undo_page_list);
	tbl->undo_pages = 0;
	tbl->undo_empty_pages = 0;
	tbl->undo_live = 0;
}

/* Give an undo page back to the arena (and to its session's temp quota). */
static void
fc_undo_page_freed(FcTable *tbl, FcUndoPage *page)
{
	fc_arena_free_page((char *) page, FC_PAGE_UNDO);
	if (tbl->is_temp)
		fc_temp_quota_pages_freed(tbl->temp_owner, 1);
}

/* Give every undo page back; the caller owns the table exclusively. */
void
fc_undo_free_table(FcTable *tbl)
{
	dlist_mutable_iter iter;

	/* the arena reuses a freed page's first bytes: the iterator has moved on */
	dlist_foreach_modify(iter, &tbl->undo_page_list)
		fc_undo_page_freed(tbl, dlist_container(FcUndoPage, node, iter.cur));
	fc_undo_init_table(tbl);
}

/* A free record of the first page that has one, or NULL; undo_lock held. */
static FcUndo *
fc_undo_take_locked(FcTable *tbl)
{
	FcUndoPage *page;
	FcUndo	   *undo;

	if (dlist_is_empty(&tbl->undo_partial))
		return NULL;
	page = dlist_head_element(FcUndoPage, partial_node, &tbl->undo_partial);
	undo = page->free;
	page->free = undo->prev;
	if (page->nfree == tbl->undo_per_page)
		tbl->undo_empty_pages--;
	if (--page->nfree == 0)
		dlist_delete(&page->partial_node);
	tbl->undo_live++;
	return undo;
}

FcUndo *
fc_undo_alloc(FcTable *tbl, Oid relid)
{
	FcUndo	   *undo;
	FcUndoPage *page;

	SpinLockAcquire(&tbl->undo_lock);
	undo = fc_undo_take_locked(tbl);
	SpinLockRelease(&tbl->undo_lock);
	if (undo != NULL)
	{
		memset(undo, 0, FC_UNDO_HEADER_SIZE);
		return undo;
	}

	/* carve a new page into free records (temporary ones count: temp_quota.c) */
	if (tbl->is_temp)
		fc_temp_quota_check_pages(1, relid);
	page = (FcUndoPage *) fc_arena_alloc_page(FC_PAGE_UNDO, relid);
	if (tbl->is_temp)
		fc_temp_quota_pages_added(tbl->temp_owner, 1);
	page->free = NULL;
	for (uint32 i = 0; i < tbl->undo_per_page; i++)
	{
		FcUndo	   *rec = (FcUndo *) ((char *) page + FC_UNDO_PAGE_HEADER +
									  (Size) i * tbl->undo_record_size);

		rec->prev = page->free;
		page->free = rec;
	}
	page->nfree = tbl->undo_per_page;

	SpinLockAcquire(&tbl->undo_lock);
	dlist_push_head(&tbl->undo_page_list, &page->node);
	tbl->undo_pages++;
	tbl->undo_empty_pages++;
	dlist_push_head(&tbl->undo_partial, &page->partial_node);
	undo = fc_undo_take_locked(tbl);
	SpinLockRelease(&tbl->undo_lock);
	memset(undo, 0, FC_UNDO_HEADER_SIZE);
	return undo;
}

/*
 * Free a record; undo_lock held.  Returns its page if that page is now to
 * go back to the arena, which the caller does once it has released the
 * lock (fc_undo_page_freed).
 */
static FcUndoPage *
fc_undo_free_locked(FcTable *tbl, FcUndo *undo)
{
	FcUndoPage *page = fc_undo_page_of(undo);

	undo->prev = page->free;
	page->free = undo;
	if (page->nfree++ == 0)
		dlist_push_head(&tbl->undo_partial, &page->partial_node);
	tbl->undo_live--;
	if (page->nfree < tbl->undo_per_page)
		return NULL;
	if (tbl->undo_empty_pages == 0)
	{
		tbl->undo_empty_pages++;	/* kept for the next updates */
		return NULL;
	}
	dlist_delete(&page->partial_node);
	dlist_delete(&page->node);
	tbl->undo_pages--;
	return page;
}

void
fc_undo_release_unused(FcTable *tbl, FcUndo *undo)
{
	FcUndoPage *empty;

	SpinLockAcquire(&tbl->undo_lock);
	empty = fc_undo_free_locked(tbl, undo);
	SpinLockRelease(&tbl->undo_lock);
	if (empty != NULL)
		fc_undo_page_freed(tbl, empty);
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
		FcUndoPage *empty;
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

		/*
		 * Still the head, and the same record: another backend may have
		 * reclaimed it meanwhile and a new update taken it again, with
		 * another superseder or without the detached mark.
		 */
		SpinLockAcquire(&tbl->undo_lock);
		if (tbl->undo_fifo_head != head || head->flags != flags ||
			head->superseded_by != superseded_by)
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
		empty = fc_undo_free_locked(tbl, head);
		SpinLockRelease(&tbl->undo_lock);
		if (empty != NULL)
			fc_undo_page_freed(tbl, empty);
		done++;
	}
	return done;
}
