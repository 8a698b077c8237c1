/*-------------------------------------------------------------------------
 *
 * gate.h
 *	  The access gate: fastckpt tables open only after startup recovery.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_GATE_H
#define FC_GATE_H

#include "postgres.h"

#include "datatype/timestamp.h"

typedef struct FcRecoveryStats
{
	TimestampTz started_at;
	TimestampTz finished_at;	/* 0 while running */
	int			databases;
	int			tables;
	int			indexes;
	int			workers;
	int64		log_bytes;
	int64		log_records;
	int64		records_applied;
	int64		records_skipped;	/* aborted or never committed */
	int64		rows_applied;
	int			replay_workers; /* processes that applied the log's rows */
	double		replay_seconds;
	double		index_rebuild_seconds;
	double		total_seconds;
	/* checkpoint loading */
	int64		checkpoint_seq;		/* 0: none, the log was replayed whole */
	int64		checkpoint_csn;
	bool		checkpoint_fallback;	/* the newest was damaged */
	int			load_workers;
	int64		load_bytes;
	int64		load_rows;
	int64		load_deltas;	/* delta files applied */
	double		load_seconds;
	/* calls replayed in commit order */
	int64		calls_replayed;
	double		call_replay_seconds;
	int64		calls_mismatched;	/* accepted: recovery_accept_call_mismatch */
	char		error[256];		/* why the tables stay closed, if they do */
} FcRecoveryStats;

extern bool fc_gate_is_open(void);
extern bool fc_gate_passes(void);
extern bool fc_gate_close_database(Oid dbid, const char *reason);
extern const char *fc_gate_closed_database_label(Oid dbid);
extern void fc_gate_forget_database(Oid dbid);
extern bool fc_gate_database_closed(Oid dbid, char *reason, size_t len);
extern bool fc_gate_some_database_closed(Oid *dbid);
extern const char *fc_gate_database_label(Oid dbid);
extern void fc_gate_note_call_db(Oid dbid);
extern bool fc_gate_open_databases_have_calls(void);
extern void fc_gate_note_no_calls(void);
extern bool fc_gate_no_calls_to_replay(void);
extern void fc_gate_open(void);
extern void fc_gate_note_replayed_call(TransactionId xid);
extern void fc_gate_forget_replayed_calls(void);
extern void fc_recovery_stats_get(FcRecoveryStats *stats);
extern void fc_recovery_stats_begin(void);
extern void fc_recovery_stats_add(int databases, int tables, int indexes,
								  int workers);
extern void fc_recovery_stats_set_replay(int64 log_bytes, int64 log_records,
										 int64 records_applied,
										 int64 records_skipped,
										 int64 rows_applied, int workers,
										 double seconds);
extern void fc_recovery_stats_finish(double index_rebuild_seconds,
									 double total_seconds);
extern void fc_recovery_stats_set_load(int64 seq, int64 csn, bool fallback,
									   int workers, int64 bytes, int64 rows,
									   int64 deltas, double seconds);
extern void fc_recovery_stats_add_calls(int64 calls, int64 mismatched,
										double seconds);
extern void fc_gate_fail(const char *reason);
extern bool fc_gate_failed(char *reason, size_t len);
extern void fc_gate_register_recovery_process(void);
extern void fc_recovery_settings(void);
extern void fc_recovery_exit_if_shutdown(void);
extern void fc_recovery_stop(const char *why) pg_attribute_noreturn();
extern bool fc_recovery_was_interrupted(void);

extern void fc_register_planner_gate(void);

/* recovery workers registered at once, at most: recovery_workers' maximum */
#define FC_MAX_RECOVERY_PROCS	64

/* set in recovery workers, which must pass the closed gate */
extern bool fc_in_recovery_worker;

#endif							/* FC_GATE_H */
