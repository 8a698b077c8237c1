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
 *	  of a date or time type into the time they were parsed at; so does
 *	  planning, for the body of a LANGUAGE sql function it inlines.
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

#include "access/transam.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "common/keywords.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/scanner.h"
#include "parser/gram.h"			/* after scanner.h, which it needs */
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/formatting.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "procs/procs.h"

static planner_hook_type prev_planner_hook = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;
static needs_fmgr_hook_type prev_needs_fmgr_hook = NULL;
static int	fc_planning = 0;	/* planner depth in this backend */
static bool fc_folded_values = false;
static bool fc_cached_values = false;	/* for the session: see fc_needs_fmgr_hook */

static bool fc_scan_clock_literals(const char *source, int max_tokens,
								   bool first_only, bool zone_types);

/*
 * A user's LANGUAGE sql function the planner is about to inline: its body,
 * parsed then (no post-parse hook runs for it), replaces the call in the
 * plan, which no longer names the function; a literal such as 'now' in it
 * is read at that moment and kept in the plan.  So is a timetz literal's
 * offset, the zone's on that day: a body that names the type, or a
 * function that takes or returns it (an unknown literal becomes one), is
 * taken to hold one.
 */
static bool
fc_sql_body_names_clock(Oid funcid)
{
	HeapTuple	tup;
	bool		result = false;

	if (funcid < FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_proc proc = (Form_pg_proc) GETSTRUCT(tup);
		bool		isnull;
		Datum		src;

		if (proc->prolang == SQLlanguageId)
		{
			(void) SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosqlbody, &isnull);
			if (isnull)			/* not BEGIN ATOMIC: parsed when used */
			{
				result = fc_type_is_timetz(proc->prorettype);
				for (int i = 0; !result && i < proc->pronargs; i++)
					result = fc_type_is_timetz(proc->proargtypes.values[i]);
				src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
				result = result || isnull ||
					fc_scan_clock_literals(TextDatumGetCString(src), -1, false, true);
			}
		}
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * PostgreSQL asks this before it inlines a LANGUAGE sql function -- named
 * in the statement, or in the body of one it inlined, or behind an
 * operator or a cast -- and whenever it looks a function up to call it.
 * Answering "no hook needed" lets inlining go on; the question tells which
 * bodies a plan (or an expression the executor prepares for a column
 * default or a constraint) took in.
 */
static bool
fc_needs_fmgr_hook(Oid fn_oid)
{
	if (fn_oid >= FirstNormalObjectId && !fc_cached_values &&
		(!fc_folded_values || fc_planning == 0) &&
		fc_statement_nested() && !fc_creating_routine() &&
		fc_sql_body_names_clock(fn_oid))
	{
		if (fc_planning > 0)
			fc_folded_values = true;	/* the plan may be cached */
		else
		{
			/*
			 * Inlined outside the planner: an expression the executor
			 * prepares for one statement, or one a cache keeps for the
			 * session (a domain's checks, a partition key), which DISCARD
			 * does not make again.
			 */
			fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
			fc_cached_values = true;
		}
	}
	return prev_needs_fmgr_hook ? prev_needs_fmgr_hook(fn_oid) : false;
}

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
	Oid			elem;

	if (!OidIsValid(typid))
		return false;
	elem = get_element_type(typid);
	if (OidIsValid(elem))
		typid = elem;
	typid = getBaseType(typid);
	get_type_category_preferred(typid, &category, &preferred);
	if (category == TYPCATEGORY_COMPOSITE && get_typtype(typid) == TYPTYPE_COMPOSITE)
	{
		/* record_in reads each field with its own input function */
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
		bool		reads = false;

		check_stack_depth();
		for (int i = 0; !reads && i < desc->natts; i++)
			reads = !TupleDescAttr(desc, i)->attisdropped &&
				fc_type_input_reads_clock(TupleDescAttr(desc, i)->atttypid);
		ReleaseTupleDesc(desc);
		return reads;
	}
	return category == TYPCATEGORY_DATETIME || category == TYPCATEGORY_RANGE;
}

/*
 * Is a type of this name, in any schema, timetz or an array or domain of
 * it?  (A body casting a literal to it need not name timetz itself.)
 */
static bool
fc_type_name_is_timetz(const char *name)
{
	CatCList   *types = SearchSysCacheList1(TYPENAMENSP, CStringGetDatum(name));
	bool		result = false;

	for (int i = 0; i < types->n_members && !result; i++)
	{
		Form_pg_type typ = (Form_pg_type) GETSTRUCT(&types->members[i]->tuple);

		result = fc_type_is_timetz(typ->oid);
	}
	ReleaseSysCacheList(types);
	return result;
}

/*
 * Does a quoted literal of this SQL text name a time relative to the
 * clock?  With first_only, the first one within max_tokens tokens decides
 * (none: yes); else any of the text's.  The SQL lexer reads them, so that
 * every way of writing a string constant counts: 'now', E'now', $$now$$,
 * $q$now$q$, U&'now', and 'no' 'w' continued over a line break.  With
 * zone_types, the name of a timetz type or the keyword ZONE counts too.
 */
static bool
fc_scan_clock_literals(const char *source, int max_tokens, bool first_only,
					   bool zone_types)
{
	core_yy_extra_type yyextra;
	core_yyscan_t scanner;
	core_YYSTYPE yylval;
	YYLTYPE		yylloc;
	volatile bool result = first_only;	/* no literal found: be careful */
	List	   *volatile idents = NIL;	/* identifiers, looked up below */
	MemoryContext cxt = CurrentMemoryContext;
	ListCell   *lc;

	scanner = scanner_init(source, &yyextra, &ScanKeywords, ScanKeywordTokens);
	PG_TRY();
	{
		for (int i = 0; max_tokens < 0 || i < max_tokens; i++)
		{
			int			tok = core_yylex(&yylval, &yylloc, scanner);
			bool		names;

			if (tok == 0)
				break;
			if (zone_types && tok == ZONE)
			{
				result = true;
				break;
			}
			if (zone_types && tok == IDENT)
				idents = lappend(idents, pstrdup(yylval.str));
			if (tok != SCONST && tok != USCONST)
				continue;
			/* U&'...' escapes are decoded later: any backslash may hide one */
			names = fc_text_names_clock(yylval.str, strlen(yylval.str)) ||
				(tok == USCONST && strchr(yylval.str, '\\') != NULL);
			if (first_only || names)
			{
				result = names;
				break;
			}
		}
	}
	PG_CATCH();
	{
		/* what the parser accepted, the lexer reads: be careful all the same */
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		result = true;
	}
	PG_END_TRY();
	scanner_finish(scanner);

	/*
	 * Catalog lookups only outside the PG_TRY, whose catch swallows what
	 * the lexer raises: a cancel or a lock timeout met here must end the
	 * statement, and a failed lookup must not be half cleaned up.
	 */
	foreach(lc, idents)
	{
		if (result)
			break;
		result = fc_type_name_is_timetz((const char *) lfirst(lc));
	}
	list_free_deep(idents);
	return result;
}

static bool
fc_literal_reads_clock(const char *source, int location)
{
	/* a type name (timestamptz, time with time zone ...) may come first */
	return fc_scan_clock_literals(source + location, 16, true, false);
}

/* timetz, or an array or domain of it */
bool
fc_type_is_timetz(Oid typid)
{
	Oid			elem = get_element_type(typid);

	if (OidIsValid(elem))
		typid = elem;
	return OidIsValid(typid) && getBaseType(typid) == TIMETZOID;
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

		if (c->constisnull || c->location < 0)
			return false;
		/* a time with time zone takes the zone's offset on today's date */
		if (fc_type_is_timetz(c->consttype))
			return true;
		return fc_type_input_reads_clock(c->consttype) &&
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
	if (!fc_folded_values && fc_statement_nested() && !fc_creating_routine() &&
		((pstate->p_sourcetext != NULL &&
		  fc_clock_literal_walker((Node *) query, pstate)) ||
		 fc_query_names_temporary((Node *) query)))
		fc_folded_values = true;
}

/* Is planning running (and so maybe a function it folds)? */
bool
fc_folding_in_planner(void)
{
	return fc_planning > 0;
}

/* Something planning ran may have left its result in a plan. */
void
fc_folding_mark(void)
{
	fc_folded_values = true;
}

/* May a cached plan in this backend hold a value fixed when it was made? */
bool
fc_plans_hold_folded_values(void)
{
	return fc_folded_values || fc_cached_values;
}

/* A utility statement ran: DISCARD PLANS and ALL drop every cached plan. */
void
fc_folding_after_utility(Node *stmt)
{
	if (IsA(stmt, DiscardStmt) &&
		(((DiscardStmt *) stmt)->target == DISCARD_PLANS ||
		 ((DiscardStmt *) stmt)->target == DISCARD_ALL))
	{
		/* a call earlier in this transaction may have run such a plan */
		if (fc_folded_values)
			fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
		fc_folded_values = false;
	}
}

void
fc_register_folding_hooks(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = fc_folding_planner;
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = fc_folding_post_parse;
	prev_needs_fmgr_hook = needs_fmgr_hook;
	needs_fmgr_hook = fc_needs_fmgr_hook;
}
