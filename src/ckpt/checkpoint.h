/*-------------------------------------------------------------------------
 *
 * checkpoint.h
 *	  Wait-Free Ping-Pong checkpoints (DESIGN.md section 7): the phase swap,
 *	  the checkpoint writer, the files, and loading them at startup.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CHECKPOINT_H
#define FC_CHECKPOINT_H

#include "postgres.h"

#include "core/ckpt_format.h"
#include "datatype/timestamp.h"

/* pg_fastckpt.checkpoint_method */
typedef enum FcCkptMethod
{
	FC_CKPT_MERGE,				/* stream the last checkpoint back in */
	FC_CKPT_COPY				/* keep a copy of the last checkpoint in memory */
} FcCkptMethod;

/* pg_fastckpt.checkpoint_policy */
typedef enum FcCkptPolicy
{
	FC_POLICY_FIXED,
	FC_POLICY_ADAPTIVE
} FcCkptPolicy;

/* Why a checkpoint ran. */
typedef enum FcCkptTrigger
{
	FC_TRIGGER_TIMED,
	FC_TRIGGER_SIZE,			/* max_log_size, or the adaptive threshold */
	FC_TRIGGER_REQUESTED,
	FC_TRIGGER_SHUTDOWN,
	FC_TRIGGER_KINDS
} FcCkptTrigger;

/* Testing only: where the writer may pause (pg_fastckpt.test_checkpoint_pause). */
typedef enum FcCkptPausePoint
{
	FC_PAUSE_NONE,
	FC_PAUSE_SWAP,				/* holding the install latch, mid-swap */
	FC_PAUSE_CHUNK,				/* between chunk files */
	FC_PAUSE_INSTALL,			/* files and manifest durable, control not */
	FC_PAUSE_TRUNCATE,			/* control installed, old files not removed */
	FC_PAUSE_LOAD,				/* a startup loader worker, before its chunks */
	FC_PAUSE_REBUILD,			/* startup recovery, before rebuilding indexes */
	FC_PAUSE_PREPARE,			/* PREPARE: file durable, PostgreSQL's record not */
	FC_PAUSE_COMMIT_PREPARED,	/* COMMIT PREPARED: rows logged, not committed */
	FC_PAUSE_POINTS
} FcCkptPausePoint;

extern int	fc_checkpoint_timeout_s;
extern double fc_checkpoint_completion_target;
extern int	fc_max_log_size_mb;
extern int	fc_max_replay_calls;
extern int	fc_checkpoint_method;
extern double fc_checkpoint_delta_ratio;
extern int	fc_checkpoint_policy;
extern double fc_adaptive_lower_bound_mb;
extern double fc_adaptive_upper_bound_mb;
extern double fc_adaptive_low_watermark;
extern double fc_adaptive_high_watermark;
extern double fc_adaptive_beta;
extern double fc_adaptive_alpha;
extern int	fc_adaptive_window_s;
extern double fc_adaptive_peak_rate;
extern int	fc_test_checkpoint_pause;
extern int	fc_test_checkpoint_pause_ms;

/* Figures behind fastckpt_stat_checkpointer. */
typedef struct FcCkptStats
{
	uint64		checkpoints;
	uint64		by_trigger[FC_TRIGGER_KINDS];
	uint64		failures;
	uint64		last_seq;
	uint64		last_csn;
	uint64		last_start_lsn;
	TimestampTz last_started_at;
	TimestampTz last_finished_at;
	double		last_seconds;
	uint64		last_bytes_written;
	uint64		last_bytes_reused;	/* unchanged chunks linked, not rewritten */
	uint64		last_rows;
	uint64		last_dirty_rows;
	uint64		last_deltas_written;
	uint64		bytes_written;
	uint64		deltas_written;
	uint64		log_segments_removed;
	double		threshold_bytes;	/* log volume that triggers one now */
	double		load;			/* adaptive: load as a fraction of peak */
	double		commit_rate;	/* adaptive: EWMA of commits per second */
	uint64		pause_hits[FC_PAUSE_POINTS];
	bool		in_progress;
	char		last_error[256];
} FcCkptStats;

/* how long a checkpoint waits for the log before it fails */
#define FC_CKPT_FLUSH_WAIT_MS	10000
/* how often a checkpoint says which commit it still waits for */
#define FC_CKPT_IN_DOUBT_NOTE_S	30

/* ckpt_shared.c: shared state, the swap, transactions in doubt */
extern Size fc_ckpt_shmem_size(void);
extern void fc_ckpt_shmem_init(void);
extern void fc_ckpt_publish_csn(uint64 csn, TransactionId decided_by);
extern void fc_ckpt_note_call(uint64 csn);
extern bool fc_ckpt_calls_since_last(void);
extern uint64 fc_ckpt_calls_since_checkpoint(void);
extern void fc_ckpt_set_calls_base(uint64 base);
extern void fc_ckpt_request(bool wait);
extern void fc_ckpt_request_quietly(void);
extern void fc_ckpt_clear_csn(void);
extern bool fc_ckpt_swap(uint64 *csn, uint64 *start_lsn, uint64 *phase);
extern void fc_ckpt_swap_done(void);
extern void fc_ckpt_wait_in_doubt(uint64 csn);
extern uint64 fc_ckpt_take_requests(void);
extern void fc_ckpt_finish_requests(uint64 upto, bool ok);
extern uint64 fc_ckpt_pending_requests(uint64 handled);
extern void fc_ckpt_stats_get(FcCkptStats *stats);
extern void fc_ckpt_stats_update(void (*fn) (FcCkptStats *stats, void *arg),
								 void *arg);
extern void fc_ckpt_set_writer_latch(void);
extern void fc_ckpt_pause_point(FcCkptPausePoint point);

/* ckpt_files.c: paths, control file, manifest, cleanup */
extern char *fc_ckpt_dir_path(uint64 seq);
extern bool fc_ckpt_dir_has_entries(void);
extern char *fc_ckpt_chunk_path(uint64 seq, const fc_ckpt_table *tab,
								uint32 chunkno, uint32 layer);
extern char *fc_ckpt_manifest_path(uint64 seq);
extern int	fc_ckpt_read_control(fc_ckpt_control *ctl, const char **problem);
extern void fc_ckpt_write_control(fc_ckpt_control *ctl);
extern char *fc_ckpt_read_manifest(const fc_ckpt_ref *ref, const char **error);
extern void fc_ckpt_write_file(const char *path, const char *data, size_t len);
extern void fc_ckpt_remove_unnamed(const fc_ckpt_control *ctl);
extern void fc_ckpt_ensure_dirs(void);

/* ckpt_write.c: one checkpoint, start to finish */
extern bool fc_ckpt_run(FcCkptTrigger trigger, bool shutting_down);
extern void fc_ckpt_abandon_copy(void);

/* ckpt_worker.c */
extern void fc_register_checkpointer(void);

/* ckpt_load.c: startup */
typedef struct FcCkptLoadResult
{
	bool		found;			/* a checkpoint was loaded */
	bool		fell_back;		/* the newest was damaged; an older one used */
	uint64		seq;
	uint64		csn;
	uint64		start_lsn;
	uint64		bytes;
	uint64		rows;
	uint64		deltas;			/* delta files applied */
	int			workers;
	double		seconds;
} FcCkptLoadResult;

extern Size fc_ckpt_load_shmem_size(void);
extern void fc_ckpt_load_shmem_init(void);
extern bool fc_ckpt_load(FcCkptLoadResult *res, char *error, size_t errlen);
extern void fc_ckpt_note_loaded(const FcCkptLoadResult *load);

#endif							/* FC_CHECKPOINT_H */
