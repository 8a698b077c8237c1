/*-------------------------------------------------------------------------
 *
 * temp_quota.c
 *	  What one session's temporary fastckpt tables may take of the shared
 *	  arena and of the table directory.
 *
 * A heap temporary table lives in its session's own buffers (temp_buffers)
 * and files; a temporary fastckpt table takes its pages and its directory
 * entry from memory every session shares.  Without a cap, any role allowed
 * to create temporary tables could fill either and make every other
 * session's writes to fastckpt tables fail for as long as it stays
 * connected.  pg_fastckpt.temp_share caps each session at a share of both.
 *
 * Only the owning session writes (so allocates for) its temporary tables,
 * and it drops them itself, at the latest when it exits: its own counts
 * are exact.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pg_fastckpt.h"
#include "store/slot.h"
#include "store/temp_quota.h"
#include "utils/lsyscache.h"

int			fc_temp_share = 25;

static uint64 fc_temp_pages = 0;	/* arena pages held by this session's */
static int	fc_temp_storages = 0;

static uint64
fc_temp_page_limit(void)
{
	uint64		npages = ((uint64) fc_memory_limit_mb * 1024 * 1024) / FC_PAGE_SIZE;

	return npages * fc_temp_share / 100;
}

static int
fc_temp_storage_limit(void)
{
	return Max(1, (int) ((int64) fc_max_tables * fc_temp_share / 100));
}

static void
fc_temp_quota_error(const char *what, const char *relname, const char *detail_used)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 relname ?
			 errmsg("cannot %s temporary fastckpt table \"%s\": this session's temporary fastckpt tables are at their limit",
					what, relname) :
			 errmsg("cannot %s temporary fastckpt table: this session's temporary fastckpt tables are at their limit",
					what),
			 errdetail("%s; one session's temporary fastckpt tables may use pg_fastckpt.temp_share (%d%%) of pg_fastckpt.memory_limit (%d MB) and of pg_fastckpt.max_tables (%d), which every session shares.",
					   detail_used, fc_temp_share, fc_memory_limit_mb, fc_max_tables),
			 errhint("Drop temporary tables this session no longer needs, or create large ones USING heap; a superuser can raise pg_fastckpt.temp_share.")));
}

/* A temporary storage is about to be entered for this session. */
void
fc_temp_quota_check_storage(const char *relname)
{
	if (fc_temp_storages >= fc_temp_storage_limit())
		fc_temp_quota_error("create the storage of", relname,
							psprintf("This session holds %d temporary fastckpt storages (TRUNCATE and rewrites take a second one until they commit)",
									 fc_temp_storages));
}

void
fc_temp_quota_storage_added(void)
{
	fc_temp_storages++;
}

void
fc_temp_quota_storage_removed(void)
{
	/* another process may drop an orphaned session's tables */
	if (fc_temp_storages > 0)
		fc_temp_storages--;
}

/* Pages about to be allocated for a temporary table of this session. */
void
fc_temp_quota_check_pages(uint64 pages, Oid relid)
{
	if (fc_temp_pages + pages > fc_temp_page_limit())
		fc_temp_quota_error("write to", OidIsValid(relid) ? get_rel_name(relid) : NULL,
							psprintf("This session's temporary fastckpt tables hold %llu kB of pg_fastckpt memory",
									 (unsigned long long) (fc_temp_pages * FC_PAGE_SIZE / 1024)));
}

void
fc_temp_quota_pages_added(uint64 pages)
{
	fc_temp_pages += pages;
}

void
fc_temp_quota_pages_freed(uint64 pages)
{
	fc_temp_pages -= Min(pages, fc_temp_pages);
}
