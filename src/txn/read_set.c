/*-------------------------------------------------------------------------
 *
 * read_set.c
 *	  Read-set tracking and validation for registered calls.
 *
 * A call is logged as a CALL record only if replaying it after every
 * transaction with a smaller CSN would read what it read.  Two kinds of
 * reads are tracked while the call runs:
 *
 * - rows: the slot, the creator of the version returned, and the
 *   creator/deleter of its newest version.  A row whose newest version is
 *   not the one returned (someone else's update or delete in flight, or an
 *   older version seen through the snapshot) is a suspect.  A row the call
 *   then wrote itself needs no more checks if the call read the very
 *   version its first write replaced: row locks order every other writer
 *   of it either before that version (smaller CSN) or after the call.
 *   A read of an older version is a lost update waiting to happen (read a
 *   balance, another session updates it, write the balance read minus 10)
 *   unless the executor threw the value away: an UPDATE, DELETE or FOR
 *   UPDATE that finds a newer version re-evaluates the statement on it
 *   (EvalPlanQual), and fc_read_follow_row swaps the scan's read for one
 *   of the version locked then, where that recheck is a fresh run.
 * - tables: scans and index probes that found nothing may miss rows, so
 *   any transaction that wrote the table since counts.  Writers count
 *   themselves in the table's write_count at commit, before their CSN and
 *   after all their writes: one counted before the read started had done
 *   its writes, which the read then saw (a row in flight is a suspect).
 *
 * Validation runs after the CSN is taken: a transaction with a smaller CSN
 * did all its writes before it took its CSN, so validation sees them.
 * Writers that commit later only cause needless fallbacks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "nodes/pg_list.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "txn/read_set.h"
#include "txn/write_set.h"

typedef struct FcRowRead
{
	FcTable    *tbl;
	uint64		generation;
	uint64		slotno;
	TransactionId xmin;			/* newest version's creator when read */
	TransactionId xmax;			/* ... and its deleter */
	TransactionId read_xmin;	/* creator of the version returned, or
								 * invalid if none was */
	bool		suspect;
	bool		own;			/* the version returned was our own */
} FcRowRead;

typedef struct FcTableRead
{
	FcTable    *tbl;
	uint64		generation;
	uint64		count_at_read;	/* tbl->write_count before reading */
} FcTableRead;

typedef struct FcWriteKey
{
	FcTable    *tbl;
	uint64		slotno;
	int			seq;			/* position in the write set */
	TransactionId replaced_xmin;
} FcWriteKey;

bool		fc_read_set_active = false;

/*
 * The call's statements now running whose recheck of a newer row version
 * is not a fresh run (fc_plan_epq_exact): while one runs, no read follows
 * a row to its newer version.
 */
static List *fc_epq_inexact = NIL;

static FcRowRead *fc_rows = NULL;
static int	fc_nrows = 0;
static int	fc_rows_cap = 0;
static FcTableRead *fc_tables = NULL;
static int	fc_ntables = 0;
static int	fc_tables_cap = 0;

static void *
fc_grow(void *array, int *cap, Size elem)
{
	int			newcap = Max(32, *cap * 2);

	*cap = newcap;
	if (array == NULL)
		return MemoryContextAlloc(TopMemoryContext, newcap * elem);
	return repalloc(array, newcap * elem);
}

void
fc_read_set_begin(void)
{
	fc_nrows = 0;
	fc_ntables = 0;
	list_free(fc_epq_inexact);
	fc_epq_inexact = NIL;
	fc_read_set_active = true;
}

void
fc_read_set_reset(void)
{
	fc_read_set_active = false;
	fc_nrows = 0;
	fc_ntables = 0;
	list_free(fc_epq_inexact);
	fc_epq_inexact = NIL;
	if (fc_rows_cap > 8192)
	{
		pfree(fc_rows);
		fc_rows = NULL;
		fc_rows_cap = 0;
	}
}

/* Is the deleter of the newest version nobody, aborted, or us? */
static bool
fc_no_foreign_deleter(FcSlotHeader *hdr)
{
	return !TransactionIdIsValid(hdr->xmax) ||
		(hdr->flags & FC_XMAX_ABORTED) ||
		TransactionIdIsCurrentTransactionId(hdr->xmax);
}

void
fc_read_note_row_slow(FcTable *tbl, uint64 slotno, FcSlotHeader *hdr,
					  const FcVisible *v, Snapshot snapshot)
{
	FcRowRead  *r;
	bool		suspect;

	if (v != NULL)
		suspect = !(v->is_live && v->xmin == hdr->xmin && fc_no_foreign_deleter(hdr));
	else if (!(hdr->flags & FC_SLOT_USED) ||
			 (hdr->flags & (FC_XMIN_ABORTED | FC_SLOT_DEAD)))
		return;					/* nothing there: a stale index entry */
	else if ((hdr->flags & FC_XMAX_COMMITTED) && snapshot != NULL &&
			 IsMVCCSnapshot(snapshot) &&
			 TransactionIdPrecedes(hdr->xmax, snapshot->xmin))
		return;					/* deleted before anything we can see */
	else if (TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED) &&
			 TransactionIdIsCurrentTransactionId(hdr->xmax))
		return;					/* deleted or moved away by us: so at replay */
	else
		suspect = true;			/* a row we cannot see yet, or not any more */

	if (fc_nrows == fc_rows_cap)
		fc_rows = fc_grow(fc_rows, &fc_rows_cap, sizeof(FcRowRead));
	r = &fc_rows[fc_nrows++];
	r->tbl = tbl;
	r->generation = tbl->generation;
	r->slotno = slotno;
	r->xmin = hdr->xmin;
	r->xmax = hdr->xmax;
	r->read_xmin = v != NULL ? v->xmin : InvalidTransactionId;
	r->own = v != NULL && TransactionIdIsCurrentTransactionId(v->xmin);
	r->suspect = suspect;
}

/* A statement of the call starts; see fc_plan_epq_exact. */
void
fc_read_statement_start(const void *stmt, bool epq_exact)
{
	MemoryContext old;

	if (!fc_read_set_active || epq_exact)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	fc_epq_inexact = lappend(fc_epq_inexact, (void *) stmt);
	MemoryContextSwitchTo(old);
}

/* (A statement that fails never ends: the set only grows more careful.) */
void
fc_read_statement_end(const void *stmt)
{
	if (fc_epq_inexact != NIL)
		fc_epq_inexact = list_delete_ptr(fc_epq_inexact, (void *) stmt);
}

/*
 * A lock found a newer version of the row than the statement's scan read
 * (version scan_xmin), and the executor re-evaluates the statement on it
 * (EvalPlanQual): the scan's read of the older version no longer matters,
 * the read of the version locked does.  Only where that recheck is what
 * a fresh run of the statement would do; otherwise the older read stays,
 * and the call is logged by its rows.  Slot latch held.
 */
void
fc_read_follow_row(FcTable *tbl, uint64 slotno, FcSlotHeader *hdr,
				   TransactionId scan_xmin, const FcVisible *locked)
{
	if (!fc_read_set_active || fc_epq_inexact != NIL)
		return;
	for (int i = fc_nrows - 1; i >= 0; i--)
	{
		FcRowRead  *r = &fc_rows[i];

		if (r->tbl == tbl && r->generation == tbl->generation &&
			r->slotno == slotno && r->read_xmin == scan_xmin)
		{
			fc_rows[i] = fc_rows[--fc_nrows];
			break;
		}
	}
	fc_read_note_row_slow(tbl, slotno, hdr, locked, NULL);
}

/* Where a read of the table starts: what it may have seen of its writes. */
void
fc_read_mark(FcTable *tbl, FcTableReadMark *mark)
{
	pg_memory_barrier();
	mark->count = pg_atomic_read_u64(&tbl->write_count);
}

void
fc_read_note_table_at(FcTable *tbl, const FcTableReadMark *mark)
{
	FcTableRead *t;

	if (!fc_read_set_active)
		return;
	for (int i = 0; i < fc_ntables; i++)
	{
		t = &fc_tables[i];
		if (t->tbl == tbl && t->generation == tbl->generation)
		{
			/* keep the earliest read of a table: the one that matters */
			if (mark->count < t->count_at_read)
				t->count_at_read = mark->count;
			return;
		}
	}
	if (fc_ntables == fc_tables_cap)
		fc_tables = fc_grow(fc_tables, &fc_tables_cap, sizeof(FcTableRead));
	t = &fc_tables[fc_ntables++];
	t->tbl = tbl;
	t->generation = tbl->generation;
	t->count_at_read = mark->count;
}

void
fc_read_note_table(FcTable *tbl)
{
	FcTableReadMark mark;

	if (!fc_read_set_active)
		return;
	fc_read_mark(tbl, &mark);
	fc_read_note_table_at(tbl, &mark);
}

static int
fc_write_key_cmp(const void *a, const void *b)
{
	const FcWriteKey *x = a;
	const FcWriteKey *y = b;

	if (x->tbl != y->tbl)
		return (uintptr_t) x->tbl < (uintptr_t) y->tbl ? -1 : 1;
	if (x->slotno != y->slotno)
		return x->slotno < y->slotno ? -1 : 1;
	return 0;
}

static int
fc_write_key_seq_cmp(const void *a, const void *b)
{
	const FcWriteKey *x = a;
	const FcWriteKey *y = b;
	int			c = fc_write_key_cmp(a, b);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : (x->seq > y->seq ? 1 : 0);
}

/* The call's first write of a slot, or NULL. */
static const FcWriteKey *
fc_first_write(const FcWriteKey *key, const FcWriteKey *writes, int nwrites)
{
	const FcWriteKey *w = bsearch(key, writes, nwrites, sizeof(FcWriteKey),
								  fc_write_key_cmp);

	while (w != NULL && w > writes && fc_write_key_cmp(w - 1, key) == 0)
		w--;
	return w;
}

static bool
fc_row_still_current(const FcRowRead *r, FcWriteKey *writes, int nwrites)
{
	FcWriteKey	key = {r->tbl, r->slotno, 0, InvalidTransactionId};
	const FcWriteKey *first;
	FcSlotHeader *hdr;
	LWLock	   *lock;
	bool		current;

	if (r->tbl->generation != r->generation)
		return false;
	first = fc_first_write(&key, writes, nwrites);
	if (first != NULL)
	{
		/* we wrote it: did we read what our write replaced, or our own? */
		return r->own ||
			(TransactionIdIsValid(r->read_xmin) &&
			 r->read_xmin == first->replaced_xmin);
	}
	if (r->suspect)
		return false;
	lock = fc_slot_lock(r->tbl, r->slotno);
	hdr = fc_slot_header(r->tbl, r->slotno);
	LWLockAcquire(lock, LW_SHARED);
	current = (hdr->flags & FC_SLOT_USED) && hdr->xmin == r->xmin &&
		(hdr->xmax == r->xmax || (hdr->flags & FC_XMAX_ABORTED));
	LWLockRelease(lock);
	return current;
}

/* Did only we write the table since the read?  We counted ourselves already. */
static bool
fc_table_still_current(const FcTableRead *t)
{
	uint64		changes;
	uint64		own = 0;
	int			nwrites = fc_write_set_size();

	if (t->tbl->generation != t->generation)
		return false;
	changes = pg_atomic_read_u64(&t->tbl->write_count) - t->count_at_read;
	for (int i = 0; i < nwrites; i++)
		if (fc_write_set_get(i)->tbl == t->tbl && fc_write_starts_run(i))
			own++;
	return changes == own;
}

bool
fc_read_set_validate(void)
{
	int			nwrites = fc_write_set_size();
	FcWriteKey *writes = NULL;
	bool		valid = true;

	for (int i = 0; i < fc_ntables && valid; i++)
		valid = fc_table_still_current(&fc_tables[i]);

	if (!valid || fc_nrows == 0)
		return valid;

	if (nwrites > 0)
	{
		writes = palloc(sizeof(FcWriteKey) * nwrites);
		for (int i = 0; i < nwrites; i++)
		{
			FcWrite    *w = fc_write_set_get(i);

			writes[i].tbl = w->tbl;
			writes[i].slotno = w->slotno;
			writes[i].seq = i;
			writes[i].replaced_xmin = w->replaced_xmin;
		}
		qsort(writes, nwrites, sizeof(FcWriteKey), fc_write_key_seq_cmp);
	}
	for (int i = 0; i < fc_nrows && valid; i++)
		valid = fc_row_still_current(&fc_rows[i], writes, nwrites);
	if (writes)
		pfree(writes);
	return valid;
}
