/*-------------------------------------------------------------------------
 *
 * call_replay.h
 *	  Serial replay of a database's records from its first CALL record on:
 *	  calls run again, in CSN order, in a database-connected worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CALL_REPLAY_H
#define FC_CALL_REPLAY_H

#include "postgres.h"

#include "recovery/replay.h"
#include "store/slot.h"

/* A replayed call is running in this process (the AM asks at inserts). */
extern bool fc_replaying_call;

/* What the replayed call wrote, digested at its commit (commit.c). */
extern uint64 fc_replayed_digest;
extern uint32 fc_replayed_nwritten;

/* The slot the call's next insert into tbl was given. */
extern uint64 fc_call_replay_slot(FcTable *tbl);

/* What one database's serial replay did */
typedef struct FcSerialResult
{
	uint64		calls;
	uint64		calls_mismatched;	/* not repeated exactly, yet accepted */
	uint64		values_records;
	uint64		rows;
	uint64		index_rebuilds;
	double		seconds;
} FcSerialResult;

/*
 * Leader: replay one database's serial records with a worker; false, with
 * the reason in error, if they could not all be repeated.
 */
extern bool fc_replay_serial_database(const FcSerialDb *db, uint64 end_lsn,
									  FcSerialResult *result,
									  char *error, size_t errlen);

/* startup.c: rebuild one index from its table's rows */
extern bool fc_rebuild_one_index(Oid relid, Oid indexid);

#endif							/* FC_CALL_REPLAY_H */
