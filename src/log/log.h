/*-------------------------------------------------------------------------
 *
 * log.h
 *	  The logical log: shared buffer, durability waits, the log writer,
 *	  segment files.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_LOG_H
#define FC_LOG_H

#include "postgres.h"

#include "core/log_format.h"
#include "port/atomics.h"

/* pg_fastckpt.commit_mode */
typedef enum FcCommitMode
{
	FC_COMMIT_STRICT,
	FC_COMMIT_EARLY_LOCK_RELEASE
} FcCommitMode;

extern int	fc_commit_mode;
extern int	fc_log_buffer_size_kb;
extern bool fc_test_sync_trace;
extern bool fc_backend_flush;
extern bool fc_test_commit_no_wait;

/* Counters behind fastckpt_stat_log. */
typedef struct FcLogStats
{
	uint64		insert_lsn;
	uint64		flush_lsn;
	uint64		records[FC_REC_KIND_MAX + 1];
	uint64		bytes;
	uint64		flushes;
	uint64		backend_flushes;	/* of them, by committing backends */
	uint64		commit_waits;
	uint64		commit_wait_us;
	uint64		buffer_full_waits;
	uint64		write_errors;
	bool		failing;
	char		last_error[256];
} FcLogStats;

/* log_buffer.c */
extern Size fc_log_shmem_size(void);
extern void fc_log_shmem_init(void);
extern uint64 fc_log_insert(void *record, uint32 len);
/* what a wait for the log is for: how it takes interrupts and failures */
typedef enum FcLogWait
{
	FC_LOG_WAIT_COMMIT,			/* a commit, before it is visible */
	FC_LOG_WAIT_AFTER_COMMIT,	/* a commit already visible to others */
	FC_LOG_WAIT_READ			/* rows read, before they reach the client */
} FcLogWait;

extern void fc_log_wait_flushed(uint64 lsn, FcLogWait kind);
extern void fc_log_wait_durable_quietly(uint64 lsn);
extern bool fc_log_wait_for_client(uint64 lsn);
extern void fc_log_set_voidable(TransactionId top_xid, bool with_subxacts);
extern void fc_log_clear_voidable(void);
extern bool fc_log_xid_voidable(TransactionId xid);
extern uint64 fc_log_flushed_lsn(void);
extern uint64 fc_log_next_csn(void);
extern uint64 fc_log_peek_next_csn(void);
extern uint64 fc_log_insert_lsn(void);
extern void fc_log_start(uint64 start_lsn, uint64 next_csn);
extern bool fc_log_is_ready(void);
extern bool fc_log_is_failing(void);
extern void fc_log_check_writable(const char *relname);
extern void fc_log_stats_get(FcLogStats *stats);
extern void fc_log_stats_reset(void);
extern uint64 fc_log_calls_logged(void);

/* the writer's side of log_buffer.c */
extern uint64 fc_log_writer_attach(void);
extern uint64 fc_log_filled_upto(void);
extern const char *fc_log_buffer_range(uint64 lsn, uint64 end, uint64 *len);
extern void fc_log_set_flushed(uint64 lsn, bool by_backend);
extern bool fc_log_may_defer(uint64 written, uint64 upto);
extern bool fc_log_writer_sleep_begin(uint64 written, bool deferring);
extern void fc_log_writer_sleep_end(void);
extern void fc_log_set_failing(const char *error);
extern void fc_log_note_error(const char *error);
extern void fc_log_clear_failing(void);
extern bool fc_log_writer_idle(void);

/* log_segment.c */
extern void fc_log_dir_ensure(void);
extern char *fc_log_segment_path(uint64 segstart);
extern bool fc_log_segment_blank(uint64 segstart);

typedef struct FcLogReader FcLogReader;
extern FcLogReader *fc_log_reader_open(uint64 start_lsn);
extern const fc_log_header *fc_log_reader_next(FcLogReader *reader);
extern void fc_log_reader_seek(FcLogReader *reader, uint64 lsn);
extern void fc_log_reader_release(FcLogReader *reader);
extern uint64 fc_log_reader_end(FcLogReader *reader);
extern void fc_log_reader_close(FcLogReader *reader);
extern uint64 fc_log_first_lsn(void);
extern void fc_log_truncate_at(uint64 end_lsn);
extern uint64 fc_log_remove_before(uint64 lsn);
extern void fc_log_trace_synced(uint64 lsn);

/* log_space.c */
extern Size fc_log_space_shmem_size(void);
extern void fc_log_space_shmem_init(void);
extern void fc_log_space_set_short(uint64 end_lsn, const char *reason);
extern void fc_log_space_clear_short(void);
extern uint64 fc_log_space_end(void);
extern void fc_log_space_claim(uint64 bytes);
extern void fc_log_space_release(void);
extern void fc_log_space_check_write(const char *relname);

/* log_self_flush.c */
extern bool fc_log_flush_self(uint64 lsn);

/* log_writer.c */
extern void fc_register_log_writer(void);

#endif							/* FC_LOG_H */
