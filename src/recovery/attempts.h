/*-------------------------------------------------------------------------
 *
 * attempts.h
 *	  Steps of startup recovery that ended in a crash of the whole server,
 *	  counted across crash-restarts (attempts.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_ATTEMPTS_H
#define FC_ATTEMPTS_H

/* a database's calls replayed: past this, its tables stay closed */
#define FC_REPLAY_ATTEMPTS_MAX		3
/* the whole recovery: past this, every fastckpt table stays closed */
#define FC_RECOVERY_ATTEMPTS_MAX	5

extern int	fc_attempt_begin(const char *path, Oid dbid, uint64 key);
extern void fc_attempt_end(const char *path);
extern void fc_attempt_keep(const char *path);
extern void fc_attempt_rekey(const char *path, uint64 key);
extern void fc_attempts_end_all(void);
extern void fc_attempt_join(const char *path);
extern void fc_attempt_join_recovery(void);
extern char *fc_call_replay_attempt_path(Oid dbid);

#endif							/* FC_ATTEMPTS_H */
