/*-------------------------------------------------------------------------
 *
 * arena.c
 *	  Page allocator over a region of the main shared-memory segment.
 *
 * The region is sized by pg_fastckpt.memory_limit and allocated with the
 * rest of PostgreSQL's shared memory, so it uses huge pages when the server
 * does.  Pages are handed out from a free list, then from a high-water
 * mark, so untouched memory is never faulted in.
 *
 * Without huge pages (huge_pages), the region asks for transparent huge
 * pages, which Linux gives shared memory when
 * /sys/kernel/mm/transparent_hugepage/shmem_enabled is "advise": filling
 * the arena at startup then costs one fault per 2 MB instead of one per
 * 4 kB page, which is most of the time of loading a checkpoint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/lsyscache.h"

#include "access/fastckpt_am.h"
#include "pg_fastckpt.h"
#include "recovery/gate.h"
#include "store/arena.h"
#include "store/slot.h"

typedef struct FcArena
{
	slock_t		lock;
	uint64		npages;			/* pages in the arena */
	uint64		hwm;			/* pages ever handed out */
	char	   *free_head;		/* freed pages, linked through their first word */
	uint64		nfree;
	uint64		undo_reserve;	/* pages only undo may take */
	uint64		kind_pages[FC_PAGE_KINDS];
	char	   *base;
} FcArena;

static FcArena *fc_arena = NULL;

/*
 * The last pages go to undo only (1/64 of the arena, at least 2 pages):
 * rows that fill the memory must not leave in-place UPDATEs without room
 * for the old versions, or a table could never be updated again until a
 * TRUNCATE, however many of its rows were deleted.  Startup recovery may
 * use them for rows: it restores what was committed.
 */
#define FC_ARENA_UNDO_RESERVE_SHARE	64
#define FC_ARENA_MIN_UNDO_RESERVE	2

static uint64
fc_arena_npages(void)
{
	return ((uint64) fc_memory_limit_mb * 1024 * 1024) / FC_PAGE_SIZE;
}

Size
fc_arena_shmem_size(void)
{
	Size		size = MAXALIGN(sizeof(FcArena));

	/* pages, plus slack to align the first one */
	size = add_size(size, mul_size(fc_arena_npages(), FC_PAGE_SIZE));
	return add_size(size, FC_PAGE_SIZE);
}

/*
 * Ask for transparent huge pages over the 2 MB-aligned part of the pages.
 * Done in the postmaster before any child is forked, so every process
 * inherits it.  Only a hint: an error (say, the segment is already on
 * hugetlbfs huge pages) changes nothing.
 */
static void
fc_arena_advise_huge(char *start, Size len)
{
#ifdef MADV_HUGEPAGE
	const Size	huge = 2 * 1024 * 1024;
	char	   *first = (char *) TYPEALIGN(huge, start);
	char	   *end = (char *) TYPEALIGN_DOWN(huge, start + len);

	if (end > first && madvise(first, end - first, MADV_HUGEPAGE) != 0)
		elog(DEBUG1, "pg_fastckpt: madvise(MADV_HUGEPAGE) of the arena failed: %m");
#endif
}

void
fc_arena_shmem_init(void)
{
	bool		found;
	Size		size = fc_arena_shmem_size();

	fc_arena = ShmemInitStruct("pg_fastckpt arena", size, &found);
	if (!found)
	{
		memset(fc_arena, 0, sizeof(FcArena));
		SpinLockInit(&fc_arena->lock);
		fc_arena->npages = fc_arena_npages();
		fc_arena->undo_reserve = Max(FC_ARENA_MIN_UNDO_RESERVE,
									 fc_arena->npages / FC_ARENA_UNDO_RESERVE_SHARE);
		fc_arena->base = (char *) TYPEALIGN(FC_PAGE_SIZE,
											(char *) fc_arena + sizeof(FcArena));
		fc_arena_advise_huge(fc_arena->base, fc_arena->npages * (Size) FC_PAGE_SIZE);
	}
}

char *
fc_arena_alloc_page(FcPageKind kind, Oid relid)
{
	char	   *page = NULL;
	bool		fresh = false;
	bool		for_undo = (kind == FC_PAGE_UNDO);
	uint64		keep;
	uint64		undo_pages;

	SpinLockAcquire(&fc_arena->lock);
	/* before the gate opens only startup recovery allocates (its leader too) */
	keep = (for_undo || fc_in_recovery_worker || !fc_gate_is_open()) ?
		0 : fc_arena->undo_reserve;
	if (fc_arena->nfree + (fc_arena->npages - fc_arena->hwm) > keep)
	{
		if (fc_arena->free_head != NULL)
		{
			page = fc_arena->free_head;
			fc_arena->free_head = *(char **) page;
			fc_arena->nfree--;
		}
		else
		{
			page = fc_arena->base + (fc_arena->hwm++) * (Size) FC_PAGE_SIZE;
			fresh = true;
		}
	}
	if (page != NULL)
		fc_arena->kind_pages[kind]++;
	undo_pages = fc_arena->kind_pages[FC_PAGE_UNDO];
	SpinLockRelease(&fc_arena->lock);

	if (page == NULL)
	{
		/* startup recovery's leader and loaders have no database to look names up in */
		bool		named = OidIsValid(relid) && OidIsValid(MyDatabaseId) &&
			IsTransactionState() && !fc_in_recovery_worker;
		char	   *relname = named ? fc_table_name_for_message(relid) : NULL;

		if (relname != NULL && for_undo)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("pg_fastckpt memory is full while keeping an old row version of table \"%s\"", relname),
					 errdetail("All %d MB of pg_fastckpt.memory_limit are in use, the part kept for old row versions included; "
							   "old row versions of all fastckpt tables hold %llu kB.",
							   fc_memory_limit_mb,
							   (unsigned long long) (undo_pages * FC_PAGE_SIZE / 1024)),
					 errhint("Old versions stay while a transaction or snapshot may still read them: end long-running "
							 "transactions, VACUUM the tables updated most (VACUUM gives back the old versions no one "
							 "needs) and retry, or raise pg_fastckpt.memory_limit and restart the server.")));
		if (relname != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("pg_fastckpt memory is full while writing table \"%s\"", relname),
					 errdetail("All %d MB of pg_fastckpt.memory_limit are in use, but for the part kept for old row versions; "
							   "old row versions of all fastckpt tables hold %llu kB.",
							   fc_memory_limit_mb,
							   (unsigned long long) (undo_pages * FC_PAGE_SIZE / 1024)),
					 errhint("Raise pg_fastckpt.memory_limit and restart the server, or give memory back "
							 "with TRUNCATE or DROP TABLE. DELETE followed by VACUUM frees slots for new "
							 "rows of the same table only; VACUUM of tables updated while a long transaction "
							 "ran gives back old row versions no one needs.")));
		/* startup recovery's leader sizes tables before the gate opens */
		if (fc_gate_is_open() && !fc_in_recovery_worker)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("pg_fastckpt memory is full while writing the fastckpt table with OID %u", relid),
					 errdetail("All %d MB of pg_fastckpt.memory_limit are in use. "
							   "CREATE DATABASE copies the template's fastckpt tables into that memory.",
							   fc_memory_limit_mb),
					 errhint("Raise pg_fastckpt.memory_limit and restart the server, or give memory back "
							 "with TRUNCATE or DROP TABLE.")));
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("pg_fastckpt memory is full while recovering the table with OID %u", relid),
				 errdetail("All %d MB of pg_fastckpt.memory_limit are in use.",
						   fc_memory_limit_mb),
				 errhint("Raise pg_fastckpt.memory_limit to hold every fastckpt table and restart the server.")));
	}

	/*
	 * A page never handed out since the segment was created is still as
	 * the kernel gave it, zeroed and not even touched: leave the first
	 * touch to whoever fills it (parallel loaders at startup, not the
	 * leader that sizes the tables).
	 */
	if (!fresh)
		memset(page, 0, FC_PAGE_SIZE);
	return page;
}

void
fc_arena_free_page(char *page, FcPageKind kind)
{
	SpinLockAcquire(&fc_arena->lock);
	*(char **) page = fc_arena->free_head;
	fc_arena->free_head = page;
	fc_arena->nfree++;
	fc_arena->kind_pages[kind]--;
	SpinLockRelease(&fc_arena->lock);
}

void
fc_arena_get_stats(FcArenaStats *stats)
{
	uint64		used = 0;

	SpinLockAcquire(&fc_arena->lock);
	stats->limit_bytes = fc_arena->npages * FC_PAGE_SIZE;
	for (int i = 0; i < FC_PAGE_KINDS; i++)
	{
		stats->kind_bytes[i] = fc_arena->kind_pages[i] * FC_PAGE_SIZE;
		used += fc_arena->kind_pages[i];
	}
	SpinLockRelease(&fc_arena->lock);
	stats->used_bytes = used * FC_PAGE_SIZE;
	stats->free_bytes = stats->limit_bytes - stats->used_bytes;
}
