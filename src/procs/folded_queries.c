/*-------------------------------------------------------------------------
 *
 * folded_queries.c
 *	  Cached plans holding what a query returned when they were planned.
 *
 * Planning folds a call of an IMMUTABLE function with constant arguments
 * into its result.  A function so labelled that in truth runs a query
 * reading tables (or calling something volatile) leaves that result in the
 * plan, and a cached plan (PL/pgSQL's, a prepared statement's) keeps it
 * while the tables change.  Replay plans afresh and computes it anew, so a
 * call that ran such a plan cannot be logged as a CALL record; and which
 * cached plan a call will run, built before or in another routine, is not
 * known.  So once planning in this backend has run such a query, no call
 * here is logged as a CALL record, until DISCARD PLANS (or ALL) has the
 * cached plans made again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "optimizer/planner.h"

#include "procs/procs.h"

static planner_hook_type prev_planner_hook = NULL;
static int	fc_planning = 0;	/* planner depth in this backend */
static bool fc_folded_query_results = false;

static PlannedStmt *
fc_folding_planner(Query *parse, const char *query_string, int cursorOptions,
				   ParamListInfo boundParams)
{
	PlannedStmt *result;

	fc_planning++;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		fc_planning--;
	}
	PG_END_TRY();
	return result;
}

/*
 * A query starts: if planning runs it to fold a function call, and it
 * reads a relation or is not what replay could repeat, plans made from now
 * on may hold its result.
 */
void
fc_folding_note_query(QueryDesc *qd)
{
	if (likely(fc_planning == 0) || fc_folded_query_results)
		return;
	if (qd->plannedstmt->relationOids != NIL ||
		fc_plan_replayable(qd->plannedstmt) != FC_FALLBACK_NONE)
		fc_folded_query_results = true;
}

/* May a cached plan in this backend hold a folded query's result? */
bool
fc_plans_hold_query_results(void)
{
	return fc_folded_query_results;
}

/* A utility statement ran: DISCARD PLANS and ALL drop every cached plan. */
void
fc_folding_after_utility(Node *stmt)
{
	if (IsA(stmt, DiscardStmt) &&
		(((DiscardStmt *) stmt)->target == DISCARD_PLANS ||
		 ((DiscardStmt *) stmt)->target == DISCARD_ALL))
		fc_folded_query_results = false;
}

void
fc_register_folding_hooks(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = fc_folding_planner;
}
