/*-------------------------------------------------------------------------
 *
 * folded_queries.c
 *	  Cached plans holding values fixed when they were made.
 *
 * A routine's statements are parsed and planned once a session, and the
 * plan kept (PL/pgSQL's, a prepared statement's).  Two things fix a value
 * in it that replay, parsing and planning afresh, would compute anew:
 *
 *	- planning folds a call of an IMMUTABLE function with constant
 *	  arguments into its result; a function so labelled that in truth runs
 *	  a query reading tables (or calling something volatile) leaves what
 *	  the query returned then, while the tables change;
 *	- parsing turns the literals 'now', 'today', 'tomorrow' and 'yesterday'
 *	  of a date or time type into the time they were parsed at.
 *
 * A call that ran such a plan cannot be logged as a CALL record; and which
 * cached plan a call will run, made before it or in another routine, is
 * not known.  So once this backend has made such a plan inside a routine,
 * no call here is logged as a CALL record, until DISCARD PLANS (or ALL)
 * has the cached plans made again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"

#include "procs/procs.h"

static planner_hook_type prev_planner_hook = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static int	fc_planning = 0;	/* planner depth in this backend */
static bool fc_folded_values = false;

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
	if (likely(fc_planning == 0) || fc_folded_values)
		return;
	if (qd->plannedstmt->relationOids != NIL ||
		fc_plan_replayable(qd->plannedstmt) != FC_FALLBACK_NONE)
		fc_folded_values = true;
}

/*
 * Can the input function of this type read the clock: of a date or time,
 * a range or array of them?
 */
bool
fc_type_input_reads_clock(Oid typid)
{
	char		category;
	bool		preferred;
	Oid			elem = get_element_type(typid);

	if (OidIsValid(elem))
		typid = elem;
	get_type_category_preferred(getBaseType(typid), &category, &preferred);
	return category == TYPCATEGORY_DATETIME || category == TYPCATEGORY_RANGE;
}

/*
 * Does the quoted literal at (or just after a type name at) this place in
 * the source name a time relative to the clock?
 */
static bool
fc_literal_reads_clock(const char *source, int location)
{
	const char *quote = source + location;
	int			len = 0;

	for (int i = 0; i < 64 && *quote != '\0' && *quote != '\''; i++)
		quote++;
	if (*quote != '\'')
		return false;
	quote++;
	while (quote[len] != '\0' && quote[len] != '\'')
		len++;
	return fc_text_names_clock(quote, len);
}

/* Does this input text of a date or time name a time relative to now? */
bool
fc_text_names_clock(const char *text, int len)
{
	static const char *const words[] = {"now", "today", "tomorrow", "yesterday"};
	char	   *lower = asc_tolower(text, len);

	for (int i = 0; i < lengthof(words); i++)
		if (strstr(lower, words[i]) != NULL)
			return true;
	return false;
}

static bool
fc_clock_literal_walker(Node *node, ParseState *pstate)
{
	if (node == NULL)
		return false;
	if (IsA(node, Const))
	{
		Const	   *c = (Const *) node;

		return !c->constisnull && c->location >= 0 &&
			fc_type_input_reads_clock(c->consttype) &&
			fc_literal_reads_clock(pstate->p_sourcetext, c->location);
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, fc_clock_literal_walker, pstate, 0);
	return expression_tree_walker(node, fc_clock_literal_walker, pstate);
}

/*
 * A statement was parsed: inside a routine, one holding a literal that
 * read the clock makes a plan that keeps that time.  The client's own
 * statements are planned afresh, or are the call, whose arguments the
 * record carries as values.
 */
static void
fc_folding_post_parse(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
	if (!fc_folded_values && fc_statement_nested() && pstate->p_sourcetext != NULL &&
		fc_clock_literal_walker((Node *) query, pstate))
		fc_folded_values = true;
}

/* May a cached plan in this backend hold a value fixed when it was made? */
bool
fc_plans_hold_folded_values(void)
{
	return fc_folded_values;
}

/* A utility statement ran: DISCARD PLANS and ALL drop every cached plan. */
void
fc_folding_after_utility(Node *stmt)
{
	if (IsA(stmt, DiscardStmt) &&
		(((DiscardStmt *) stmt)->target == DISCARD_PLANS ||
		 ((DiscardStmt *) stmt)->target == DISCARD_ALL))
		fc_folded_values = false;
}

void
fc_register_folding_hooks(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = fc_folding_planner;
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = fc_folding_post_parse;
}
