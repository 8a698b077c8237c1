/*-------------------------------------------------------------------------
 *
 * pg_fastckpt.h
 *	  Settings and process-wide declarations shared by all subsystems.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_FASTCKPT_H
#define PG_FASTCKPT_H

#include "postgres.h"

#include "postmaster/bgworker.h"

#define FASTCKPT_AM_NAME	"fastckpt"

/* settings (see _PG_init for their documentation) */
extern int	fc_memory_limit_mb;
extern int	fc_default_row_size;
extern int	fc_bytes_per_char;
extern int	fc_max_tables;
extern int	fc_recovery_wait_timeout_ms;
extern int	fc_recovery_index_timeout_ms;
extern int	fc_test_recovery_delay_ms;
extern int	fc_test_replay_claim_pause_ms;
extern int	fc_test_move_pause_ms;
extern int	fc_recovery_workers;
extern int	fc_min_parallel_replay_mb;
extern bool fc_recovery_accept_call_mismatch;

/* shared-memory sizing and setup, one pair per subsystem */
extern Size fc_arena_shmem_size(void);
extern void fc_arena_shmem_init(void);
extern Size fc_table_store_shmem_size(void);
extern void fc_table_store_shmem_init(void);
extern Size fc_gate_shmem_size(void);
extern void fc_gate_shmem_init(void);

/* registration done from _PG_init */
extern int	fc_total_procs(void);
extern void fc_exit_if_orphaned(void);
extern void fc_worker_check_interrupts(void);
extern void fc_register_xact_callbacks(void);
extern void fc_register_utility_hook(void);
extern void fc_register_object_access_hook(void);
extern void fc_register_startup_worker(void);

/* background workers of this library */
extern void fc_register_static_worker(int flags, const char *function,
									  const char *type);
extern void fc_static_worker_exit(void) pg_attribute_noreturn();
extern BackgroundWorkerHandle *fc_start_dynamic_worker(int flags,
													   const char *function,
													   const char *type,
													   const char *name,
													   Datum arg);

/* durable_io.c: syncs of pg_fastckpt's own files that never PANIC */
extern int	fc_fsync_dir(const char *path);
extern void fc_fsync_dir_or_error(const char *path);
extern void fc_start_writeback(int fd, off_t offset, off_t nbytes);

#endif							/* PG_FASTCKPT_H */
