/*-------------------------------------------------------------------------
 *
 * client_output.c
 *	  Keep what a transaction read from a commit whose record is not durable
 *	  yet from reaching the client before that record is (DESIGN.md
 *	  section 5, "no reading the future").
 *
 * A statement outside a transaction block that wrote fastckpt rows puts
 * off the wait for what it read to its commit, whose own record comes
 * later, and so does a statement that returns no rows (txn/commit.c).
 * Not everything such a statement sends waits for the end of its
 * transaction: a NOTICE is flushed as it is raised and an error is sent
 * before the rollback; outside a block, rows past the 8 kB send buffer go
 * out as it fills, and an extended-protocol client may ask for a flush.
 * So once a backend puts a wait off, its messages to the client go
 * through the wrappers below: a notice waits for the put-off position, an
 * error for as long as the rollback would, and outside a block so does
 * any flush.  (In a block the
 * statement's "UPDATE 1" and the next statements' replies leave freely:
 * waiting for them would hold row locks across a log flush.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "libpq/libpq.h"
#include "miscadmin.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"

#include "log/log.h"
#include "txn/write_set.h"

/* PostgreSQL's send buffer (pqcomm.c); a fuller one is flushed on the spot */
#define FC_CLIENT_SEND_BUFFER	8192

static const PQcommMethods *fc_inner_methods = NULL;
static PQcommMethods fc_guarded_methods;
static size_t fc_unflushed = 0; /* bytes put since our last flush */
/* what this transaction's put-off wait holds back */
typedef enum FcOutputHold
{
	FC_HOLD_NOTHING,
	FC_HOLD_MESSAGES,			/* notices and errors */
	FC_HOLD_ALL					/* every byte that leaves */
} FcOutputHold;

static FcOutputHold fc_output_hold = FC_HOLD_NOTHING;

/*
 * Wait for the put-off position, if what is about to leave is held back.
 * False when the process is being terminated (or the postmaster is gone):
 * nothing more is then sent.  In a critical section (a PANIC on its way
 * out) nothing can wait.
 */
static bool
fc_output_may_leave(FcOutputHold needs)
{
	uint64		lsn = fc_output_hold >= needs ? fc_read_wait_lsn : 0;

	if (lsn == 0 || whereToSendOutput != DestRemote || CritSectionCount > 0)
		return true;
	if (fc_log_wait_for_client(lsn))
		return true;
	whereToSendOutput = DestNone;
	return false;
}

static int
fc_guarded_flush(void)
{
	if (!fc_output_may_leave(FC_HOLD_ALL))
		return 0;
	fc_unflushed = 0;
	return fc_inner_methods->flush();
}

static int
fc_guarded_flush_if_writable(void)
{
	if (!fc_output_may_leave(FC_HOLD_ALL))
		return 0;
	return fc_inner_methods->flush_if_writable();
}

static int
fc_guarded_putmessage(char msgtype, const char *s, size_t len)
{
	bool		may;

	/* message type and length word, then the body */
	fc_unflushed += 1 + 4 + len;
	if (msgtype == 'E' && fc_output_hold != FC_HOLD_NOTHING)
	{
		/*
		 * An error is how the client learns that something failed: it
		 * goes out after the wait a rollback makes, which gives up while
		 * the log cannot be written.  The transaction is ending in that
		 * rollback, which holds back the rest.
		 */
		if (whereToSendOutput == DestRemote && CritSectionCount == 0)
			fc_log_wait_durable_quietly(fc_read_wait_lsn);
		fc_output_hold = FC_HOLD_NOTHING;
		may = true;
	}
	else if (msgtype == 'N')
		may = fc_output_may_leave(FC_HOLD_MESSAGES);
	else
		may = fc_unflushed <= FC_CLIENT_SEND_BUFFER ||
			fc_output_may_leave(FC_HOLD_ALL);
	if (!may)
		return 0;
	return fc_inner_methods->putmessage(msgtype, s, len);
}

static void
fc_guarded_putmessage_noblock(char msgtype, const char *s, size_t len)
{
	/* grows the buffer rather than flushing it */
	fc_unflushed += 1 + 4 + len;
	fc_inner_methods->putmessage_noblock(msgtype, s, len);
}

/*
 * Until the transaction ends, hold back what would leave before the end
 * of the transaction: everything (all_output, a statement outside a block
 * that wrote) or notices and errors; called when a wait for what was read
 * is put off.  The first call routes this backend's client messages
 * through the wrappers (the methods are set when the connection starts,
 * so once is enough).  Parallel workers send to their leader, which
 * guards its own output.
 */
void
fc_client_output_guard(bool all_output)
{
	if (whereToSendOutput != DestRemote || IsParallelWorker())
		return;
	if (all_output)
		fc_output_hold = FC_HOLD_ALL;
	else if (fc_output_hold == FC_HOLD_NOTHING)
		fc_output_hold = FC_HOLD_MESSAGES;
	if (PqCommMethods == &fc_guarded_methods)
		return;
	fc_inner_methods = PqCommMethods;
	fc_guarded_methods = *PqCommMethods;
	fc_guarded_methods.flush = fc_guarded_flush;
	fc_guarded_methods.flush_if_writable = fc_guarded_flush_if_writable;
	fc_guarded_methods.putmessage = fc_guarded_putmessage;
	fc_guarded_methods.putmessage_noblock = fc_guarded_putmessage_noblock;

	/*
	 * Bytes already waiting were read durably (the wait put off now is the
	 * first), but unless there are none, their number is unknown: count a
	 * full buffer, so that the next message waits.  From the next flush on
	 * the count is exact.
	 */
	fc_unflushed = fc_inner_methods->is_send_pending() ? FC_CLIENT_SEND_BUFFER : 0;
	PqCommMethods = &fc_guarded_methods;
}

/* The transaction ended: its commit or rollback waited for what it read. */
void
fc_client_output_disarm(void)
{
	fc_output_hold = FC_HOLD_NOTHING;
}
