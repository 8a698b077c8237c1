/*-------------------------------------------------------------------------
 *
 * temp_quota.h
 *	  One session's share of the arena and the table directory for its
 *	  temporary fastckpt tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_TEMP_QUOTA_H
#define FC_TEMP_QUOTA_H

#include "postgres.h"

extern int	fc_temp_share;

extern Size fc_temp_quota_shmem_size(void);
extern void fc_temp_quota_shmem_init(void);
extern int	fc_temp_quota_owner(void);
extern void fc_temp_quota_check_storage(const char *relname);
extern void fc_temp_quota_storage_added(int owner);
extern void fc_temp_quota_storage_removed(int owner);
extern void fc_temp_quota_check_pages(uint64 pages, Oid relid);
extern void fc_temp_quota_pages_added(int owner, uint64 pages);
extern void fc_temp_quota_pages_freed(int owner, uint64 pages);

#endif							/* FC_TEMP_QUOTA_H */
