/*-------------------------------------------------------------------------
 *
 * arena.h
 *	  The shared-memory arena: fixed-size pages carved from PostgreSQL's
 *	  main shared-memory segment at startup.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_ARENA_H
#define FC_ARENA_H

#include "postgres.h"

typedef enum FcPageKind
{
	FC_PAGE_SLOTS,
	FC_PAGE_UNDO,
	FC_PAGE_DIRECTORY,
	FC_PAGE_KINDS
} FcPageKind;

typedef struct FcArenaStats
{
	uint64		limit_bytes;
	uint64		used_bytes;
	uint64		free_bytes;
	uint64		kind_bytes[FC_PAGE_KINDS];
} FcArenaStats;

/* Allocate a zeroed page; on exhaustion raise an error naming the table. */
extern char *fc_arena_alloc_page(FcPageKind kind, Oid relid);
extern void fc_arena_free_page(char *page, FcPageKind kind);
extern void fc_arena_get_stats(FcArenaStats *stats);

#endif							/* FC_ARENA_H */
