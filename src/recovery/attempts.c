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
 * postmaster then tells every other process to quit (SIGQUIT).  The process
 * doing a step marks its file when told so (fc_attempt_watch_quit): that
 * attempt did not crash the server and is not counted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/timestamp.h"

#include "core/file_layout.h"
#include "recovery/attempts.h"

#define FC_ATTEMPT_MAGIC		0x46435241	/* "FCRA" */

typedef struct FcAttempt
{
	uint32		magic;
	int32		postmaster_pid;
	TimestampTz postmaster_start;
	Oid			dbid;
	uint64		key;			/* what else tells the step apart */
	int32		attempts;
	int32		quit;			/* told to quit: another process crashed */
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
			cur.attempts = prev.attempts + (prev.quit ? 0 : 1);
			if (prev.quit)
				ereport(LOG,
						(errmsg("pg_fastckpt: the last attempt of this step (\"%s\") ended in another process's crash; not counted",
								path)));
		}
		CloseTransientFile(fd);
	}

	/* without the file, a step that crashes is only not counted */
	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
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
	if (read(fd, &rec, sizeof(rec)) == sizeof(rec) && rec.magic == FC_ATTEMPT_MAGIC)
	{
		rec.key = key;
		if (pg_pwrite(fd, &rec, sizeof(rec), 0) != sizeof(rec))
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

static int	fc_quit_fd = -1;

/*
 * SIGQUIT: mark the step's file (only async-signal-safe calls), then exit.
 * Only the postmaster's counts: a routine may send the signal itself.
 */
static void
fc_attempt_quit_handler(int signo, siginfo_t *info, void *context)
{
	int32		quit = 1;
	ssize_t		written = 0;

	/* if the write fails, the attempt counts: nothing else to do */
	if (fc_quit_fd >= 0 && info != NULL && info->si_pid == PostmasterPid)
		written = pg_pwrite(fc_quit_fd, &quit, sizeof(quit), offsetof(FcAttempt, quit));
	(void) written;
	_exit(2);					/* as SignalHandlerForCrashExit */
}

/*
 * This process does the step whose file is path: if the postmaster tells
 * it to quit (another process crashed), the attempt is marked as not
 * having crashed the server.
 */
void
fc_attempt_watch_quit(const char *path)
{
	/* not a transient file: those close at the end of each transaction */
	fc_quit_fd = BasicOpenFile(path, O_WRONLY | PG_BINARY);
	if (fc_quit_fd >= 0)
	{
		struct sigaction act;

		memset(&act, 0, sizeof(act));
		act.sa_sigaction = fc_attempt_quit_handler;
		act.sa_flags = SA_SIGINFO;
		sigfillset(&act.sa_mask);
		sigaction(SIGQUIT, &act, NULL);
	}
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
