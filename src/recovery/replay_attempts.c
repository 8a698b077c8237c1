/*-------------------------------------------------------------------------
 *
 * replay_attempts.c
 *	  Replays of a database's logged calls that ended in a crash of the
 *	  whole server, counted across crash-restarts.
 *
 * A call whose replay kills its process (the OOM killer, a crash in a
 * routine's code) takes the server through a crash-restart, and the next
 * start replays it again: with restart_after_crash, for ever, and no
 * table of any kind is usable meanwhile.  So before a database's calls
 * replay, the recovery leader notes the attempt in a file, and removes the
 * file once the replay has ended, either way.  A file still there at the
 * next attempt, left by the same postmaster (a new postmaster is a new run
 * for the administrator, with whatever was fixed meanwhile), is an attempt
 * that crashed the server.  After FC_REPLAY_ATTEMPTS_MAX of those in a
 * row, the database's tables stay closed rather than its calls replay
 * again.  No fsync: a crash-restart keeps the kernel's page cache, and a
 * power loss starts another postmaster anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/timestamp.h"

#include "core/file_layout.h"
#include "recovery/call_replay.h"

#define FC_REPLAY_ATTEMPT_MAGIC	0x46435241	/* "FCRA" */

typedef struct FcReplayAttempt
{
	uint32		magic;
	int32		postmaster_pid;
	TimestampTz postmaster_start;
	Oid			dbid;
	uint64		first_lsn;		/* of the database's first serial record */
	int32		attempts;
} FcReplayAttempt;

/*
 * Note an attempt to replay dbid's calls; its number, counting the
 * attempts of this postmaster that crashed the server before this one.
 */
int
fc_replay_attempt_begin(Oid dbid, uint64 first_lsn)
{
	FcReplayAttempt prev;
	FcReplayAttempt cur;
	int			fd;

	memset(&cur, 0, sizeof(cur));
	cur.magic = FC_REPLAY_ATTEMPT_MAGIC;
	cur.postmaster_pid = (int32) PostmasterPid;
	cur.postmaster_start = PgStartTime;
	cur.dbid = dbid;
	cur.first_lsn = first_lsn;
	cur.attempts = 1;

	fd = OpenTransientFile(FC_REPLAY_ATTEMPT_PATH, O_RDONLY | PG_BINARY);
	if (fd >= 0)
	{
		if (read(fd, &prev, sizeof(prev)) == sizeof(prev) &&
			prev.magic == cur.magic &&
			prev.postmaster_pid == cur.postmaster_pid &&
			prev.postmaster_start == cur.postmaster_start &&
			prev.dbid == cur.dbid && prev.first_lsn == cur.first_lsn)
			cur.attempts = prev.attempts + 1;
		CloseTransientFile(fd);
	}

	/* without the file, a crashing replay is only not counted */
	fd = OpenTransientFile(FC_REPLAY_ATTEMPT_PATH, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0 || write(fd, &cur, sizeof(cur)) != sizeof(cur))
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not write file \"%s\": %m", FC_REPLAY_ATTEMPT_PATH)));
	if (fd >= 0)
		CloseTransientFile(fd);
	return cur.attempts;
}

/* The attempt ended without taking the server down. */
void
fc_replay_attempt_end(void)
{
	if (unlink(FC_REPLAY_ATTEMPT_PATH) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not remove file \"%s\": %m", FC_REPLAY_ATTEMPT_PATH)));
}
