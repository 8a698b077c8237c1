/*-------------------------------------------------------------------------
 *
 * attempts.c
 *	  Steps of startup recovery that ended in a crash of the whole server,
 *	  counted across crash-restarts.
 *
 * A logged call or an index expression whose evaluation kills its process
 * (the OOM killer, a crash in a routine's code) takes the server through
 * a crash-restart, and the next start runs it again: with
 * restart_after_crash, for ever, and no table of any kind is usable
 * meanwhile.  So before such a step the recovery leader notes the attempt
 * in a file, and removes the file once the step has ended, either way.  A
 * file still there at the next attempt, left by the same postmaster (a new
 * postmaster is a new run for the administrator, with whatever was fixed
 * meanwhile), is an attempt that crashed the server; past a limit the
 * caller keeps tables closed rather than try again.  No fsync: a
 * crash-restart keeps the kernel's page cache, and a power loss starts
 * another postmaster anyway.
 *
 * A crash of another process (any backend's) restarts the server too; the
 * postmaster then tells every other process to quit (SIGQUIT).  So each
 * process doing a step joins it (fc_attempt_join): it writes its pid into
 * the file, marks its entry when the postmaster tells it to quit, and
 * clears it when it exits cleanly.  An entry still there unmarked is a
 * process of the step that died without being told: the step crashed the
 * server.  Every entry marked (or cleared) and the attempt did not; with
 * none at all, nothing tells, and it counts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/timestamp.h"

#include "core/file_layout.h"
#include "recovery/attempts.h"

#define FC_ATTEMPT_MAGIC		0x46435242	/* "FCRB" */

/* processes of one step at once: recovery_workers (<= 64) and theirs */
#define FC_ATTEMPT_MEMBERS		128

typedef struct FcAttemptMember
{
	int32		pid;			/* 0: a free entry */
	int32		quit;			/* told to quit: another process crashed */
} FcAttemptMember;

typedef struct FcAttempt
{
	uint32		magic;
	int32		postmaster_pid;
	TimestampTz postmaster_start;
	Oid			dbid;
	int32		overflow;		/* a process found no free entry */
	uint64		key;			/* what else tells the step apart */
	int32		attempts;
	int32		reserved;
	FcAttemptMember members[FC_ATTEMPT_MEMBERS];
} FcAttempt;

/* Steps under way in this process, whose files a clean end removes. */
#define FC_ATTEMPTS_UNDER_WAY	2
static char fc_under_way[FC_ATTEMPTS_UNDER_WAY][MAXPGPATH];

static void
fc_track(const char *path, bool on)
{
	for (int i = 0; i < FC_ATTEMPTS_UNDER_WAY; i++)
	{
		if (on && fc_under_way[i][0] == '\0')
		{
			strlcpy(fc_under_way[i], path, MAXPGPATH);
			return;
		}
		if (!on && strcmp(fc_under_way[i], path) == 0)
			fc_under_way[i][0] = '\0';
	}
}

/* The step this process takes part in: its file, and its entry there. */
static volatile int fc_member_fd = -1;
static volatile off_t fc_member_offset;
static char fc_member_path[MAXPGPATH];
static bool fc_leave_registered = false;

/*
 * SIGQUIT: mark this process's entry (only async-signal-safe calls), then
 * exit.  Only the postmaster's counts: a routine may send the signal itself.
 */
static void
fc_attempt_quit_handler(int signo, siginfo_t *info, void *context)
{
	int			fd = fc_member_fd;
	int32		quit = 1;
	ssize_t		written = 0;

	/* if the write fails, the attempt counts: nothing else to do */
	if (fd >= 0 && info != NULL && info->si_pid == PostmasterPid)
		written = pg_pwrite(fd, &quit, sizeof(quit),
							fc_member_offset + offsetof(FcAttemptMember, quit));
	(void) written;
	_exit(2);					/* as SignalHandlerForCrashExit */
}

/* Leave the step: its file is removed, or this process ends. */
static void
fc_attempt_leave(bool clear)
{
	int			fd = fc_member_fd;
	int32		pid = 0;

	if (fd < 0)
		return;
	fc_member_fd = -1;			/* first: the handler may run meanwhile */
	if (clear && pg_pwrite(fd, &pid, sizeof(pid),
						   fc_member_offset + offsetof(FcAttemptMember, pid)) != sizeof(pid))
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not write file \"%s\": %m", fc_member_path)));
	close(fd);
	fc_member_path[0] = '\0';
}

/*
 * Did the attempt whose file holds prev crash the server?  Yes if one of its
 * processes died untold, or nothing says who took part.
 */
static bool
fc_attempt_crashed(const FcAttempt *prev)
{
	bool		any = false;

	if (prev->overflow)
		return true;
	for (int i = 0; i < FC_ATTEMPT_MEMBERS; i++)
	{
		if (prev->members[i].pid == 0)
			continue;
		if (!prev->members[i].quit)
			return true;
		any = true;
	}
	return !any;
}

/*
 * Note an attempt at the step whose file is path (for database dbid, and
 * key); its number, counting the attempts of this postmaster at the same
 * step that crashed the server before this one, and those given up on
 * (fc_attempt_keep).
 */
int
fc_attempt_begin(const char *path, Oid dbid, uint64 key)
{
	FcAttempt	prev;
	FcAttempt	cur;
	int			fd;

	memset(&cur, 0, sizeof(cur));
	cur.magic = FC_ATTEMPT_MAGIC;
	cur.postmaster_pid = (int32) PostmasterPid;
	cur.postmaster_start = PgStartTime;
	cur.dbid = dbid;
	cur.key = key;
	cur.attempts = 1;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd >= 0)
	{
		if (read(fd, &prev, sizeof(prev)) == sizeof(prev) &&
			prev.magic == cur.magic &&
			prev.postmaster_pid == cur.postmaster_pid &&
			prev.postmaster_start == cur.postmaster_start &&
			prev.dbid == cur.dbid && prev.key == cur.key)
		{
			bool		crashed = fc_attempt_crashed(&prev);

			cur.attempts = prev.attempts + (crashed ? 1 : 0);
			if (!crashed)
				ereport(LOG,
						(errmsg("pg_fastckpt: the last attempt of this step (\"%s\") ended in another process's crash; not counted",
								path)));
			else if (cur.attempts > 1)
				ereport(LOG,
						(errmsg("pg_fastckpt: attempt %d of this step (\"%s\"): the last one crashed the server",
								cur.attempts, path)));
		}
		CloseTransientFile(fd);
	}

	/* without the file, a step that crashes is only not counted */
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0 && errno == ENOENT && MakePGDirectory(FC_DIR) == 0)
		fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);	/* a new cluster's first start */
	if (fd < 0 || write(fd, &cur, sizeof(cur)) != sizeof(cur))
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not write file \"%s\": %m", path)));
	if (fd >= 0)
		CloseTransientFile(fd);
	fc_track(path, true);
	return cur.attempts;
}

/* The attempt at the step whose file is path ended without a crash. */
void
fc_attempt_end(const char *path)
{
	if (fc_member_fd >= 0 && strcmp(fc_member_path, path) == 0)
		fc_attempt_leave(false);
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not remove file \"%s\": %m", path)));
	/* last: path may be the entry it clears (fc_attempts_end_all) */
	fc_track(path, false);
}

/*
 * The step whose file is path moves to a part that other files count
 * (key tells it apart): a crash there does not count for this step.
 */
void
fc_attempt_rekey(const char *path, uint64 key)
{
	FcAttempt	rec;
	int			fd = OpenTransientFile(path, O_RDWR | PG_BINARY);

	if (fd < 0)
		return;
	/* the key alone: the processes of the step write their entries */
	if (read(fd, &rec, sizeof(rec)) == sizeof(rec) && rec.magic == FC_ATTEMPT_MAGIC)
	{
		if (pg_pwrite(fd, &key, sizeof(key), offsetof(FcAttempt, key)) != sizeof(key))
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("pg_fastckpt: could not write file \"%s\": %m", path)));
	}
	CloseTransientFile(fd);
}

/*
 * The step was given up on: keep its file, so that later crash-restarts
 * of this postmaster give it up at once rather than crash again.
 */
void
fc_attempt_keep(const char *path)
{
	fc_track(path, false);
}

/*
 * A clean exit (0, or 1 after an error) clears the entry; any other exit
 * code restarts the server as a crash does, and the entry stays.
 */
static void
fc_attempt_leave_at_exit(int code, Datum arg)
{
	fc_attempt_leave(code == 0 || code == 1);
}

/*
 * This process takes part in the step whose file is path, if one is under
 * way: it gets an entry there, marked if the postmaster tells it to quit
 * (another process crashed), so that the attempt is not counted for that.
 * Called before the process runs anything that may crash: a process of the
 * step without an entry could crash the server uncounted, for ever.
 */
void
fc_attempt_join(const char *path)
{
	FcAttempt	rec;
	int			fd;
	int			entry = -1;
	struct sigaction act;

	if (fc_member_fd >= 0)
		return;					/* one step at a time */
	/* not a transient file: those close at the end of each transaction */
	fd = BasicOpenFile(path, O_RDWR | PG_BINARY);
	if (fd < 0)
		return;					/* no step under way */
	if (flock(fd, LOCK_EX) != 0 ||
		pg_pread(fd, &rec, sizeof(rec), 0) != sizeof(rec) ||
		rec.magic != FC_ATTEMPT_MAGIC)
	{
		close(fd);
		return;					/* not one of ours: nothing to count */
	}
	for (int i = 0; i < FC_ATTEMPT_MEMBERS && entry < 0; i++)
		if (rec.members[i].pid == 0)
			entry = i;
	if (entry >= 0)
	{
		FcAttemptMember me = {(int32) MyProcPid, 0};

		fc_member_offset = offsetof(FcAttempt, members) + entry * sizeof(FcAttemptMember);
		if (pg_pwrite(fd, &me, sizeof(me), fc_member_offset) != sizeof(me))
			entry = -1;
	}
	if (entry < 0)
	{
		int32		overflow = 1;

		/* untracked, a crash of this process could pass for another's */
		if (pg_pwrite(fd, &overflow, sizeof(overflow), offsetof(FcAttempt, overflow)) != sizeof(overflow))
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("pg_fastckpt: could not write file \"%s\": %m", path)));
		(void) flock(fd, LOCK_UN);
		close(fd);
		return;
	}
	(void) flock(fd, LOCK_UN);

	strlcpy(fc_member_path, path, MAXPGPATH);
	fc_member_fd = fd;
	if (!fc_leave_registered)
		before_shmem_exit(fc_attempt_leave_at_exit, (Datum) 0);
	fc_leave_registered = true;
	memset(&act, 0, sizeof(act));
	act.sa_sigaction = fc_attempt_quit_handler;
	act.sa_flags = SA_SIGINFO;
	sigfillset(&act.sa_mask);
	sigaction(SIGQUIT, &act, NULL);
}

/* This process takes part in the whole startup recovery (its leader's). */
void
fc_attempt_join_recovery(void)
{
	fc_attempt_join(FC_RECOVERY_ATTEMPT_PATH);
}

/* Recovery ends here (stopped, failed or done): no step crashed. */
void
fc_attempts_end_all(void)
{
	for (int i = 0; i < FC_ATTEMPTS_UNDER_WAY; i++)
		if (fc_under_way[i][0] != '\0')
			fc_attempt_end(fc_under_way[i]);
}

/* The file of the replay of a database's calls. */
char *
fc_call_replay_attempt_path(Oid dbid)
{
	return psprintf("%s_%u", FC_REPLAY_ATTEMPT_PATH, dbid);
}
