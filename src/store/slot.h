/*-------------------------------------------------------------------------
 *
 * slot.h
 *	  Layout of fastckpt storage in the shared-memory arena: tables, slots,
 *	  slot headers and undo versions.
 *
 * A table's rows live in fixed-size slots.  Slot number s is TID
 * (s / FC_SLOTS_PER_BLOCK, s % FC_SLOTS_PER_BLOCK + 1) and never changes
 * for the life of a row, so indexes stay valid across in-place updates.
 * Each slot holds (interleaved Ping-Pong layout, see core/pingpong.h) its
 * header, the live row image and the two shadow images.  Older versions of
 * a row, needed by older snapshots, live in undo records chained from the
 * header.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_SLOT_H
#define FC_SLOT_H

#include "postgres.h"

#include "access/transam.h"
#include "core/pingpong.h"
#include "lib/ilist.h"
#include "port/atomics.h"
#include "storage/itemptr.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

/* Arena page: unit of allocation for slots, undo records and directories. */
#define FC_PAGE_SIZE			(64 * 1024)

/* Virtual block = this many slots (must not exceed MaxHeapTuplesPerPage). */
#define FC_SLOTS_PER_BLOCK		256

/* Largest row image: three images and a header must fit in one page. */
#define FC_SLOT_HEADER_SIZE		64
#define FC_MAX_IMAGE_CAPACITY	((FC_PAGE_SIZE - FC_SLOT_HEADER_SIZE) / 3 / 8 * 8)

/*
 * Extent directory: a fixed top level of directory pages, each holding
 * FC_DIR_FANOUT slot page pointers and, after them, those pages' mark
 * bytes (fc_page_marks): one arena page per FC_DIR_FANOUT slot pages.
 */
#define FC_DIR_FANOUT			4096
#define FC_DIR_TOP				128
StaticAssertDecl(FC_DIR_FANOUT * (sizeof(char *) + 1) <= FC_PAGE_SIZE,
				 "a directory page holds its pointers and marks");

/* Named LWLock tranches. */
#define FC_SLOT_LOCK_TRANCHE	"pg_fastckpt_slot"
#define FC_SLOT_LOCKS			4096
#define FC_MISC_LOCK_TRANCHE	"pg_fastckpt"
#define FC_MISC_LOCKS			5
#define FC_LOCK_DIRECTORY		0	/* table directory hash */
#define FC_LOCK_INSTALL			1	/* commit install latch */
#define FC_LOCK_PROCS			2	/* registered procedures' counters */
#define FC_LOCK_FLUSH			3	/* one log flush at a time */
#define FC_LOCK_ADOPT			4	/* logging a lost table's new storage */

/* FcSlotHeader.flags */
#define FC_SLOT_USED			0x0001	/* holds a row (possibly dead) */
#define FC_XMIN_COMMITTED		0x0002	/* hint: creator committed */
#define FC_XMIN_ABORTED			0x0004	/* creator aborted (or super-deleted) */
#define FC_XMIN_FROZEN			0x0008	/* creator visible to everyone */
#define FC_XMAX_COMMITTED		0x0010	/* hint: deleter committed */
#define FC_XMAX_ABORTED			0x0020	/* hint: deleter aborted */
#define FC_XMAX_UPDATED			0x0040	/* moved by an update: next_tid valid */
#define FC_XMAX_KEYS_UPDATED	0x0080	/* that update changed key columns */
#define FC_SLOT_DEAD			0x0100	/* invisible to all, awaiting cleanup */
#define FC_SPECULATIVE			0x0200	/* speculative insert, token in next_tid */
#define FC_SLOT_STALE			0x0400	/* unused, but index entries may still
										 * point here (serial replay only) */

#define FC_XMIN_HINTS	(FC_XMIN_COMMITTED | FC_XMIN_ABORTED | FC_XMIN_FROZEN)
#define FC_XMAX_BITS	(FC_XMAX_COMMITTED | FC_XMAX_ABORTED | FC_XMAX_UPDATED | \
						 FC_XMAX_KEYS_UPDATED)

/* FcSlotHeader.xlock_info: explicit row lock(s) */
#define FC_XLOCK_MULTI			0x8000	/* xlock is a MultiXactId */
#define FC_XLOCK_MODE_MASK		0x0003	/* LockTupleMode of a single locker */

typedef struct FcUndo FcUndo;

/*
 * Slot header.  The live version was created by xmin/cmin; xmax/cmax is
 * its deleter (or the transaction that moved it to next_tid).  Explicit row
 * locks (FOR SHARE etc.) are kept apart from the versions in xlock, so an
 * in-place update does not disturb concurrent key-share lockers.
 */
typedef struct FcSlotHeader
{
	fc_pp_marks marks;			/* shadow image marks */
	uint16		flags;
	uint16		xlock_info;
	uint32		live_len;
	TransactionId xmin;
	CommandId	cmin;
	TransactionId xmax;
	CommandId	cmax;
	TransactionId xlock;
	ItemPointerData next_tid;
	uint16		moved_from;		/* fc_move_tag of the slot the row moved from */
	FcUndo	   *undo;			/* previous version, or NULL */
	uint64		link;			/* free-list link while the slot is unused */
} FcSlotHeader;

StaticAssertDecl(sizeof(FcSlotHeader) == FC_SLOT_HEADER_SIZE,
				 "slot header size");

/* FcUndo.flags, besides the FC_XMIN_* hints */
#define FC_UNDO_DETACHED		0x1000	/* popped back by an abort */

/*
 * An older version of a row.  superseded_by is the transaction whose
 * in-place update replaced it: once that xid is older than every snapshot,
 * nobody can need this version and it is reclaimed (oldest first, through
 * the table's FIFO).
 */
struct FcUndo
{
	FcUndo	   *prev;			/* next older version of the same row */
	FcUndo	   *newer;			/* next newer one; NULL: the slot points here */
	FcUndo	   *fifo_next;		/* allocation order, for reclaim */
	uint64		slotno;
	TransactionId xmin;
	CommandId	cmin;
	TransactionId superseded_by;
	uint16		flags;
	uint16		reserved;
	uint32		len;
	uint32		reserved2;
	char		data[FLEXIBLE_ARRAY_MEMBER];
};

#define FC_UNDO_HEADER_SIZE		MAXALIGN(offsetof(FcUndo, data))

typedef struct FcTableKey
{
	Oid			dbid;
	Oid			spcid;
	Oid			relnode;
} FcTableKey;

/*
 * A table's storage: one per relfilenode, like PostgreSQL's own storage,
 * so TRUNCATE and rewrites get a fresh FcTable and the old one is dropped
 * when the transaction commits.
 *
 * Fields are grouped by who writes them, each group a cache line apart:
 * every row access reads the first group, and would otherwise stall on
 * the counters every commit adds to and the undo list every update takes.
 */
typedef struct FcTable
{
	/* set at creation (dir grows under alloc_lock) */
	FcTableKey	key;			/* hash key, must be first */
	uint64		generation;		/* unique per creation; validates caches */
	Oid			relid;			/* pg_class OID at creation (for views) */
	bool		is_temp;		/* a temporary table's: never logged nor
								 * checkpointed (it ends with its session) */
	int			temp_owner;		/* its session's process number (temp_quota.c),
								 * or -1 */
	uint64		create_csn;		/* commit that created it; 0: not committed
								 * yet.  Checkpoints hold tables with a
								 * create_csn below their S. */
	uint64		ckpt_bytes;		/* in the last checkpoint (for views) */
	fc_pp_layout layout;
	uint32		slots_per_page;
	uint32		undo_record_size;
	uint32		undo_per_page;
	char	  **dir[FC_DIR_TOP];	/* directory pages, see FC_DIR_FANOUT */

	char		pad_alloc[PG_CACHE_LINE_SIZE];
	slock_t		alloc_lock;		/* protects the fields down to ndir_pages,
								 * and growing dir */
	pg_atomic_uint64 nslots;	/* slots handed out (high-water mark) */
	uint64		free_slot_head; /* slotno + 1 of first free slot, or 0 */
	uint64		nfree_slots;
	uint64		npages;			/* slot pages */
	uint64		ndir_pages;

	char		pad_counts[PG_CACHE_LINE_SIZE];
	pg_atomic_uint64 live_rows; /* committed rows (int64 in two's complement) */
	pg_atomic_uint64 write_count;	/* transactions that wrote it, counted
									 * at commit before their CSN (call
									 * validation) */

	char		pad_undo[PG_CACHE_LINE_SIZE];
	slock_t		undo_lock;		/* protects the undo fields */
	dlist_head	undo_partial;	/* pages with free records (undo.c) */
	FcUndo	   *undo_fifo_head;
	FcUndo	   *undo_fifo_tail;
	dlist_head	undo_page_list; /* every undo page */
	uint64		undo_pages;
	uint64		undo_empty_pages;	/* pages whose records are all free */
	uint64		undo_live;		/* records allocated and not yet freed */
	char		pad_end[PG_CACHE_LINE_SIZE];	/* from the next table's */
} FcTable;

/*
 * Slot address of a slot number, and the slot page holding it (the caller
 * knows slotno < nslots).
 */
static inline char *
fc_slot_locate(FcTable *tbl, uint64 slotno, uint64 *page)
{
	uint64		p = slotno / tbl->slots_per_page;

	*page = p;
	return tbl->dir[p / FC_DIR_FANOUT][p % FC_DIR_FANOUT] +
		(slotno - p * tbl->slots_per_page) * tbl->layout.stride;
}

static inline char *
fc_slot_ptr(FcTable *tbl, uint64 slotno)
{
	uint64		page;

	return fc_slot_locate(tbl, slotno, &page);
}

static inline FcSlotHeader *
fc_slot_header(FcTable *tbl, uint64 slotno)
{
	return (FcSlotHeader *) fc_slot_ptr(tbl, slotno);
}

/*
 * A slot page's summary of its Ping-Pong marks: bit k set when a slot of
 * the page may have shadow image k marked.  Installs set it (after their
 * mark, under the install latch or in recovery); the checkpoint writer
 * clears it once every image-k mark of the page is clean, and skips a
 * page without it, so a checkpoint's walk costs the pages that changed,
 * not the table.
 */
static inline uint8 *
fc_page_marks(FcTable *tbl, uint64 page)
{
	return (uint8 *) (tbl->dir[page / FC_DIR_FANOUT] + FC_DIR_FANOUT) +
		page % FC_DIR_FANOUT;
}

static inline void
fc_page_note_install(FcTable *tbl, uint64 page, uint64 phase)
{
	uint8	   *m = fc_page_marks(tbl, page);
	uint8		bit = (uint8) (1 << fc_pp_current_image(phase));

	/* test first: the byte is shared by the page's slots */
	if ((__atomic_load_n(m, __ATOMIC_RELAXED) & bit) == 0)
		__atomic_fetch_or(m, bit, __ATOMIC_RELAXED);
}

/*
 * Install a slot's live image (of live_len bytes), or a tombstone, into
 * the current shadow image, and note it in its page's summary.  Every
 * install (commit, log replay, call replay) goes through these, so no
 * marked slot sits in a page the checkpoint writer skips.  sp and page
 * come from fc_slot_locate.
 */
static inline void
fc_slot_install_live(FcTable *tbl, char *sp, uint64 page, uint64 phase)
{
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	fc_pp_install(&hdr->marks, sp, &tbl->layout, phase,
				  fc_pp_live(sp, &tbl->layout), hdr->live_len);
	fc_page_note_install(tbl, page, phase);
}

static inline void
fc_slot_install_tombstone(FcTable *tbl, char *sp, uint64 page, uint64 phase)
{
	fc_pp_install_tombstone(&((FcSlotHeader *) sp)->marks, phase);
	fc_page_note_install(tbl, page, phase);
}

static inline uint64
fc_tid_to_slot(ItemPointer tid)
{
	return (uint64) ItemPointerGetBlockNumberNoCheck(tid) * FC_SLOTS_PER_BLOCK +
		(ItemPointerGetOffsetNumberNoCheck(tid) - 1);
}

static inline void
fc_slot_to_tid(uint64 slotno, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (slotno / FC_SLOTS_PER_BLOCK),
				   (OffsetNumber) (slotno % FC_SLOTS_PER_BLOCK + 1));
}

/* Is this TID a plausible slot of the table right now? */
static inline bool
fc_tid_in_range(FcTable *tbl, ItemPointer tid, uint64 *slotno)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (off < 1 || off > FC_SLOTS_PER_BLOCK)
		return false;
	*slotno = fc_tid_to_slot(tid);
	return *slotno < pg_atomic_read_u64(&tbl->nslots);
}

/*
 * Fill a slot with a new row version created by xmin/cmin: no deleter, no
 * lockers, no older versions.  The caller holds the slot latch (or owns
 * the table, in recovery) and sets next_tid and flags.
 */
static inline void
fc_slot_set_new_row(FcTable *tbl, char *sp, const void *image, uint32 len,
					TransactionId xmin, CommandId cmin)
{
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	memcpy(fc_pp_live(sp, &tbl->layout), image, len);
	hdr->live_len = len;
	hdr->xmin = xmin;
	hdr->cmin = cmin;
	hdr->xmax = InvalidTransactionId;
	hdr->cmax = InvalidCommandId;
	hdr->xlock = InvalidTransactionId;
	hdr->xlock_info = 0;
	hdr->moved_from = 0;
	hdr->undo = NULL;
}

/*
 * A row moved by an update names its new slot in next_tid, and the new
 * slot names the old one by this tag (never 0), so that a chain followed
 * long after (WHERE CURRENT OF, currtid) stops at a slot freed and taken
 * by another row since, as heap checks the next version's xmin.  The tag
 * has 15 bits: a slot taken by a row moved there from another slot passes
 * for the old row's new version once in 32,768 such cases.
 */
static inline uint16
fc_move_tag(uint64 slotno)
{
	return (uint16) ((slotno * UINT64CONST(0x9E3779B97F4A7C15)) >> 48) | 1;
}

/* Striped slot latches: readers share, writers are exclusive. */
extern LWLockPadded *fc_slot_locks;

static inline LWLock *
fc_slot_lock(FcTable *tbl, uint64 slotno)
{
	uint64		h = (slotno * UINT64CONST(0x9E3779B97F4A7C15)) ^ tbl->generation;

	return &fc_slot_locks[(h >> 17) & (FC_SLOT_LOCKS - 1)].lock;
}

extern LWLock *fc_misc_lock(int which);

#endif							/* FC_SLOT_H */
