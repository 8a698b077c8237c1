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
 * but another may drop them (a superuser's DROP TABLE): what each session
 * holds is counted in shared memory, by the owner's process number, which
 * the table keeps.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/lsyscache.h"

#include "pg_fastckpt.h"
#include "store/slot.h"
#include "store/temp_quota.h"

int			fc_temp_share = 25;

/* What one session's temporary tables hold, by its process number. */
typedef struct FcTempUse
{
	pg_atomic_uint64 pages;		/* arena pages */
	pg_atomic_uint32 storages;
} FcTempUse;

static FcTempUse *fc_temp_use = NULL;

Size
fc_temp_quota_shmem_size(void)
{
	return mul_size(fc_total_procs(), sizeof(FcTempUse));
}

void
fc_temp_quota_shmem_init(void)
{
	bool		found;

	fc_temp_use = ShmemInitStruct("pg_fastckpt temporary tables",
								  fc_temp_quota_shmem_size(), &found);
	if (!found)
		for (int i = 0; i < fc_total_procs(); i++)
		{
			pg_atomic_init_u64(&fc_temp_use[i].pages, 0);
			pg_atomic_init_u32(&fc_temp_use[i].storages, 0);
		}
}

/* The process number a new temporary table is counted under. */
int
fc_temp_quota_owner(void)
{
	return MyProc != NULL ? MyProc->pgprocno : -1;
}

static FcTempUse *
fc_temp_use_of(int owner)
{
	return owner >= 0 && owner < fc_total_procs() ? &fc_temp_use[owner] : NULL;
}

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
	FcTempUse  *use = fc_temp_use_of(fc_temp_quota_owner());
	uint32		held;

	if (use == NULL)
		return;
	held = pg_atomic_read_u32(&use->storages);
	if (held >= (uint32) fc_temp_storage_limit())
		fc_temp_quota_error("create the storage of", relname,
							psprintf("This session holds %u temporary fastckpt storages (a table truncated or rewritten, or dropped after a savepoint, keeps its old one until its transaction ends)",
									 held));
}

void
fc_temp_quota_storage_added(int owner)
{
	FcTempUse  *use = fc_temp_use_of(owner);

	if (use != NULL)
		pg_atomic_fetch_add_u32(&use->storages, 1);
}

void
fc_temp_quota_storage_removed(int owner)
{
	FcTempUse  *use = fc_temp_use_of(owner);

	if (use != NULL)
		pg_atomic_fetch_sub_u32(&use->storages, 1);
}

/* Pages about to be allocated for a temporary table of this session. */
void
fc_temp_quota_check_pages(uint64 pages, Oid relid)
{
	FcTempUse  *use = fc_temp_use_of(fc_temp_quota_owner());
	uint64		held;

	if (use == NULL)
		return;
	held = pg_atomic_read_u64(&use->pages);
	if (held + pages > fc_temp_page_limit())
		fc_temp_quota_error("write to", OidIsValid(relid) ? get_rel_name(relid) : NULL,
							psprintf("This session's temporary fastckpt tables hold %llu kB of pg_fastckpt memory",
									 (unsigned long long) (held * FC_PAGE_SIZE / 1024)));
}

void
fc_temp_quota_pages_added(int owner, uint64 pages)
{
	FcTempUse  *use = fc_temp_use_of(owner);

	if (use != NULL)
		pg_atomic_fetch_add_u64(&use->pages, pages);
}

void
fc_temp_quota_pages_freed(int owner, uint64 pages)
{
	FcTempUse  *use = fc_temp_use_of(owner);

	if (use != NULL)
		pg_atomic_fetch_sub_u64(&use->pages, pages);
}
