/*-------------------------------------------------------------------------
 *
 * helpers.c
 *	  fastckpt_txn_time() and fastckpt_random(): the transaction time and
 *	  random numbers a registered routine may use, because a CALL record
 *	  carries both and replay hands the same values back (VoltDB's
 *	  getTransactionTime() and seeded-RNG rule).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "utils/timestamp.h"

#include "procs/procs.h"

PG_FUNCTION_INFO_V1(fastckpt_txn_time);
PG_FUNCTION_INFO_V1(fastckpt_random);

/* seed of the current call (logged with it), and the generator it starts */
uint64		fc_call_seed = 0;
static pg_prng_state fc_call_prng;
static bool fc_prng_seeded = false;

/* replaying a CALL record: the logged transaction time */
static bool fc_replaying = false;
static TimestampTz fc_replay_txn_time;

/* A new call: a new seed. */
void
fc_helpers_begin_call(void)
{
	fc_call_seed = pg_prng_uint64(&pg_global_prng_state);
	pg_prng_seed(&fc_call_prng, fc_call_seed);
	fc_prng_seeded = true;
}

/* Replay of a CALL record: hand back the values the call had. */
void
fc_helpers_replay_begin(uint64 seed, TimestampTz txn_time)
{
	fc_call_seed = seed;
	pg_prng_seed(&fc_call_prng, seed);
	fc_prng_seeded = true;
	fc_replaying = true;
	fc_replay_txn_time = txn_time;
}

void
fc_helpers_replay_end(void)
{
	fc_replaying = false;
	fc_prng_seeded = false;
}

Datum
fastckpt_txn_time(PG_FUNCTION_ARGS)
{
	if (fc_replaying)
		PG_RETURN_TIMESTAMPTZ(fc_replay_txn_time);
	PG_RETURN_TIMESTAMPTZ(GetCurrentTransactionStartTimestamp());
}

/* Uniform in [0, 1), like random(). */
Datum
fastckpt_random(PG_FUNCTION_ARGS)
{
	if (!fc_prng_seeded)
		fc_helpers_begin_call();
	PG_RETURN_FLOAT8(pg_prng_double(&fc_call_prng));
}
