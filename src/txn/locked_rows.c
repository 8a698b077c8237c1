/*-------------------------------------------------------------------------
 *
 * locked_rows.c
 *	  The rows of fastckpt tables this transaction has locked (FOR UPDATE,
 *	  FOR SHARE, the KEY SHARE locks of foreign key checks), for PREPARE
 *	  TRANSACTION to keep them across restarts (prepared_row_locks.c).
 *
 * The locks themselves are in the slots (xlock); this only remembers where
 * to look.  An entry may name a row whose lock went with a rolled-back
 * savepoint, or that the transaction then updated: PREPARE looks at each
 * slot and keeps what the transaction still holds there.  Past
 * FC_LOCKED_ROWS_MAX rows (a SELECT ... FOR SHARE of a large table), only
 * the tables are kept, and PREPARE looks at each of their slots.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "store/table_store.h"
#include "txn/write_set.h"

#define FC_LOCKED_ROWS_MAX	65536

typedef struct FcLockedTable
{
	FcTable    *tbl;
	uint64		generation;
} FcLockedTable;

static FcLockedRow *fc_rows = NULL;
static int	fc_nrows = 0;
static int	fc_rows_cap = 0;
static bool fc_rows_overflow = false;

static FcLockedTable *fc_tables = NULL;
static int	fc_ntables = 0;
static int	fc_tables_cap = 0;

static void *
fc_grow(void *array, int *cap, Size elem)
{
	int			newcap = Max(16, *cap * 2);

	array = array == NULL ?
		MemoryContextAlloc(TopMemoryContext, newcap * elem) :
		repalloc(array, newcap * elem);
	*cap = newcap;
	return array;
}

static void
fc_note_table(FcTable *tbl)
{
	for (int i = fc_ntables - 1; i >= 0; i--)
		if (fc_tables[i].tbl == tbl && fc_tables[i].generation == tbl->generation)
			return;
	if (fc_ntables == fc_tables_cap)
		fc_tables = fc_grow(fc_tables, &fc_tables_cap, sizeof(FcLockedTable));
	fc_tables[fc_ntables].tbl = tbl;
	fc_tables[fc_ntables].generation = tbl->generation;
	fc_ntables++;
}

void
fc_locked_rows_note(FcTable *tbl, uint64 slotno)
{
	fc_note_table(tbl);
	if (fc_rows_overflow)
		return;
	if (fc_nrows > 0 && fc_rows[fc_nrows - 1].tbl == tbl &&
		fc_rows[fc_nrows - 1].slotno == slotno)
		return;
	if (fc_nrows == FC_LOCKED_ROWS_MAX)
	{
		fc_rows_overflow = true;
		return;
	}
	if (fc_nrows == fc_rows_cap)
		fc_rows = fc_grow(fc_rows, &fc_rows_cap, sizeof(FcLockedRow));
	fc_rows[fc_nrows].tbl = tbl;
	fc_rows[fc_nrows].generation = tbl->generation;
	fc_rows[fc_nrows].slotno = slotno;
	fc_nrows++;
}

bool
fc_locked_rows_exist(void)
{
	return fc_ntables > 0;
}

void
fc_locked_rows_reset(void)
{
	fc_nrows = 0;
	fc_ntables = 0;
	fc_rows_overflow = false;
	if (fc_rows_cap > 4096)
	{
		pfree(fc_rows);
		fc_rows = NULL;
		fc_rows_cap = 0;
	}
}

static int
fc_locked_row_cmp(const void *a, const void *b)
{
	const FcLockedRow *x = (const FcLockedRow *) a;
	const FcLockedRow *y = (const FcLockedRow *) b;

	if (x->tbl != y->tbl)
		return (uintptr_t) x->tbl < (uintptr_t) y->tbl ? -1 : 1;
	if (x->slotno != y->slotno)
		return x->slotno < y->slotno ? -1 : 1;
	return 0;
}

/*
 * Call fn for each slot that may hold a lock of this transaction: each
 * noted row once, or every slot of the noted tables after an overflow.
 * Storage truncated or dropped since is skipped.
 */
void
fc_locked_rows_foreach(fc_locked_row_fn fn, void *arg)
{
	if (fc_rows_overflow)
	{
		for (int i = 0; i < fc_ntables; i++)
		{
			FcTable    *tbl = fc_tables[i].tbl;

			if (tbl->generation != fc_tables[i].generation)
				continue;
			for (uint64 slotno = 0; slotno < fc_table_nslots(tbl); slotno++)
			{
				CHECK_FOR_INTERRUPTS();
				fn(tbl, slotno, arg);
			}
		}
		return;
	}
	qsort(fc_rows, fc_nrows, sizeof(FcLockedRow), fc_locked_row_cmp);
	for (int i = 0; i < fc_nrows; i++)
	{
		FcLockedRow *r = &fc_rows[i];

		if (i > 0 && fc_locked_row_cmp(r, &fc_rows[i - 1]) == 0)
			continue;
		if (r->tbl->generation != r->generation)
			continue;
		fn(r->tbl, r->slotno, arg);
	}
}
