/*-------------------------------------------------------------------------
 *
 * call_capture.c
 *	  Recognise a top-level call of a registered routine, follow it while
 *	  it runs, and decide at commit how its transaction is logged.
 *
 * A call is a client statement that is exactly `SELECT f(args)` (a Result
 * plan computing one registered function) or `CALL p(args)` of a
 * registered procedure, with arguments that are constants, parameters, or
 * immutable expressions of them.  While it runs, every query it executes
 * is checked (determinism.c) and what it reads is recorded (read_set.c).
 * Anything replay could not repeat taints the call with a reason; the
 * first reason is the one counted.
 *
 * At commit the transaction is logged as one CALL record only if the
 * call is untainted, its reads are still current, it was the only
 * writer of fastckpt rows in its transaction, and the routine is the
 * version that was registered.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/gin.h"
#include "access/htup_details.h"
#include "access/toast_compression.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_expr.h"
#include "parser/parser.h"
#include "pgtime.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/bytea.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/plancache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/xml.h"

#include "procs/procs.h"
#include "recovery/gate.h"
#include "txn/read_set.h"
#include "txn/write_set.h"

typedef enum FcCallState
{
	FC_CALL_NONE,				/* no call in this transaction */
	FC_CALL_RUNNING,
	FC_CALL_DONE				/* returned; its transaction goes on */
} FcCallState;

/* A slot an insert of the call was given, and by which of its queries */
typedef struct FcCallSlot
{
	fc_log_call_slot slot;
	const void *tbl;
	int			statement;
} FcCallSlot;

typedef struct FcCall
{
	FcCallState state;
	Oid			funcid;
	TransactionId definition;	/* pg_proc row version at registration */
	Oid			role;			/* replay runs as this role */
	TimestampTz txn_time;
	FcFallback	taint;
	bool		counted;		/* in the stats (once per call) */
	QueryDesc  *query;			/* the SELECT that makes the call */
	bool		is_procedure;
	bool		variadic;
	Oid			inputcollid;
	int			nargs;
	fc_log_call_arg argdesc[FUNC_MAX_ARGS];
	char	   *args;			/* serialized argument values */
	Size		args_len;
	Size		args_cap;
	char	   *session;		/* search_path and fc_call_session_settings */
	uint32		session_len;
	uint64		catalog_epoch;	/* fc_catalog_epoch() when it began */
	int			statement;		/* queries the call has started */
	int			nslots;			/* slots its inserts were given */
	int			slots_cap;
	FcCallSlot *slots;
} FcCall;

bool		fc_call_active = false;
bool		fc_call_finished = false;

static FcCall fc_call;
static int	fc_nesting = 0;		/* executor and utility depth */
static int	fc_creating_routines = 0;	/* CREATE FUNCTION/PROCEDURE depth */

static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

static void
fc_call_set_state(FcCallState state)
{
	fc_call.state = state;
	fc_call_active = (state == FC_CALL_RUNNING);
	fc_call_finished = (state == FC_CALL_DONE);
}

/* Is a statement running that a routine (or another statement) started? */
bool
fc_statement_nested(void)
{
	return fc_nesting > 0;
}

/*
 * Is CREATE FUNCTION or CREATE PROCEDURE running?  Its validator parses
 * the body to check it and keeps nothing it made.
 */
bool
fc_creating_routine(void)
{
	return fc_creating_routines > 0;
}

void
fc_call_taint(FcFallback reason)
{
	if (fc_call.state == FC_CALL_NONE || fc_call.taint != FC_FALLBACK_NONE)
		return;
	fc_call.taint = reason;
	fc_read_set_reset();		/* no need to track reads any further */
}

bool
fc_call_tainted(void)
{
	return fc_call.taint != FC_FALLBACK_NONE;
}

static void
fc_call_reset(void)
{
	fc_call_set_state(FC_CALL_NONE);
	fc_call.taint = FC_FALLBACK_NONE;
	fc_call.counted = false;
	fc_call.query = NULL;
	fc_call.nslots = 0;
	fc_call.statement = 0;
	fc_read_set_reset();
}

/* Append one argument value, as parallel query ships datums. */
static void
fc_args_append(Datum value, bool isnull, Oid type)
{
	int16		typlen;
	bool		typbyval;
	Size		need;
	char	   *pos;

	get_typlenbyval(type, &typlen, &typbyval);
	need = datumEstimateSpace(value, isnull, typbyval, typlen);
	if (fc_call.args_len + need > fc_call.args_cap)
	{
		Size		cap = Max(fc_call.args_cap * 2, fc_call.args_len + need + 256);

		fc_call.args = fc_call.args == NULL ?
			MemoryContextAlloc(TopMemoryContext, cap) : repalloc(fc_call.args, cap);
		fc_call.args_cap = cap;
	}
	pos = fc_call.args + fc_call.args_len;
	datumSerialize(value, isnull, typbyval, typlen, &pos);
	fc_call.args_len = pos - fc_call.args;
}

/*
 * Is a value of this type the same value in another session?  Not an
 * anonymous record (ROW(...) passed as record or anyelement), nor an array
 * of them: its row type is registered in the session that built it, under
 * a number that means another row type, or none, in replay's.  Nor one of
 * a temporary type, which ends with its session.
 */
bool
fc_arg_type_portable(Oid type)
{
	Oid			base = getBaseType(type);
	Oid			elem = get_element_type(base);

	if (base == RECORDOID)
		return false;
	/* a temporary type goes with its session, unannounced to catalog_watch.c */
	if (fc_type_is_temporary(type) || fc_type_is_temporary(base) ||
		(OidIsValid(elem) && (fc_type_is_temporary(elem) ||
							  fc_type_is_temporary(getBaseType(elem)))))
		return false;
	return !OidIsValid(elem) || getBaseType(elem) != RECORDOID;
}

/*
 * Evaluate and keep the argument values.  Only constants, parameters and
 * immutable expressions of them: anything else could have effects of its
 * own, or give another value at replay.
 */
static bool
fc_capture_args(List *args, ParamListInfo params)
{
	EState	   *estate;
	ListCell   *lc;

	fc_call.args_len = 0;
	foreach(lc, args)
	{
		Node	   *arg = (Node *) lfirst(lc);

		if (contain_mutable_functions(arg) || contain_subplans(arg) ||
			!fc_arg_type_portable(exprType(arg)))
			return false;
	}
	if (list_length(args) > FUNC_MAX_ARGS)
		return false;
	estate = CreateExecutorState();
	estate->es_param_list_info = params;
	fc_call.nargs = 0;
	foreach(lc, args)
	{
		Expr	   *arg = (Expr *) lfirst(lc);
		ExprState  *state = ExecPrepareExpr(arg, estate);
		bool		isnull;
		Datum		value;

		value = ExecEvalExprSwitchContext(state, GetPerTupleExprContext(estate), &isnull);
		fc_args_append(value, isnull, exprType((Node *) arg));
		fc_call.argdesc[fc_call.nargs].type = exprType((Node *) arg);
		fc_call.argdesc[fc_call.nargs].collation = exprCollation((Node *) arg);
		fc_call.nargs++;
	}
	FreeExecutorState(estate);
	return true;
}

static Oid
fc_func_language(Oid funcid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	Oid			lang = InvalidOid;

	if (HeapTupleIsValid(tup))
	{
		lang = ((Form_pg_proc) GETSTRUCT(tup))->prolang;
		ReleaseSysCache(tup);
	}
	return lang;
}

/*
 * Settings replay runs a call with, and why each matters although nothing
 * it touches is volatile:
 *	- extra_float_digits, bytea_output: float4out, float8out and byteaout
 *	  are immutable yet read them (every extra_float_digits above 0 gives
 *	  the same shortest exact text);
 *	- standard_conforming_strings, transform_null_equals: a routine's
 *	  queries are parsed when it runs, with the session's settings;
 *	- quote_all_identifiers: quote_ident() is immutable yet reads it;
 *	- session_replication_role: "replica" skips the foreign-key triggers
 *	  replay would fire;
 *	- array_nulls, xmlbinary, xmloption, timezone_abbreviations: how
 *	  literals in the routine's queries read, and XML values print;
 *	- gin_fuzzy_search_limit: GIN scans return a random subset;
 *	- default_toast_compression: the stored bytes of a large value, which
 *	  the replayed call's digest compares;
 *	- row_security: off errors where replay would filter;
 *	- lc_monetary: how a money literal in the routine's queries reads
 *	  ('1' is one yen or a hundred cents); its value here is "C" rather
 *	  than the server's, and a record carries any that reads money
 *	  otherwise (fc_monetary_reads_as_c);
 *	- the PL/pgSQL settings: check_asserts off skips a failing ASSERT,
 *	  extra_warnings = too_many_rows makes SELECT INTO ask for two rows
 *	  without STRICT's error, variable_conflict resolves names otherwise.
 * Values as SHOW prints them: replay sets only those that differ.
 *
 * Most are carried: a CALL record holds the call's own value when it is
 * not the one here, as the server's configuration or a client may set it.
 * Their effect shows at run time, or planning reads them and cached plans
 * are made again when they change (fc_plan_settings_note).  The others
 * must have these values for a call to be logged as CALL:
 * standard_conforming_strings changes how a routine's text is scanned, and
 * PL/pgSQL keeps that as first scanned; a GIN scan's random subset cannot
 * be repeated; planning reads timezone_abbreviations, whose changes no
 * variable shows cheaply; PL/pgSQL reads extra_errors and variable_conflict
 * when it compiles a routine, once in a session.
 */
const FcReplaySetting fc_replay_settings[] = {
	{"extra_float_digits", "1", true},
	{"bytea_output", "hex", true},
	{"standard_conforming_strings", "on", false},
	{"transform_null_equals", "off", true},
	{"quote_all_identifiers", "off", true},
	{"session_replication_role", "origin", true},
	{"array_nulls", "on", true},
	{"xmlbinary", "base64", true},
	{"xmloption", "content", true},
	{"timezone_abbreviations", "Default", false},
	{"gin_fuzzy_search_limit", "0", false},
	{"default_toast_compression", "pglz", true},
	{"row_security", "on", true},
	{"lc_monetary", "C", true},
	{"plpgsql.check_asserts", "on", true},
	{"plpgsql.extra_warnings", "none", true},
	{"plpgsql.extra_errors", "none", false},
	{"plpgsql.variable_conflict", "error", false},
};
const int	fc_replay_nsettings = lengthof(fc_replay_settings);

/* The index of a setting in fc_replay_settings, or -1. */
int
fc_replay_setting_index(const char *name)
{
	for (int i = 0; i < fc_replay_nsettings; i++)
		if (strcmp(fc_replay_settings[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * The settings planning reads that a CALL record carries, as this backend
 * last ran a statement with them: the date and time ones
 * (fc_call_session_settings) and the carried ones above that planning may
 * fold into a plan.  Cached plans keep what they read when planned: when
 * these changed since the last call, every cached plan is made again
 * before the next call uses it, as replay does between calls whose
 * settings differ.  Only calls pay for that; other statements just note
 * the change.
 */
typedef struct FcPlanSettings
{
	int			datestyle;
	int			dateorder;
	int			intervalstyle;
	pg_tz	   *timezone;
	int			float_digits;	/* all above 0 print alike: 1 for them */
	int			bytea_output;
	int			xmlbinary;
	int			xmloption;
	bool		transform_null_equals;
	bool		quote_all_identifiers;
	bool		array_nulls;
} FcPlanSettings;

static bool fc_plan_settings_seen = false;
static bool fc_plan_settings_changed = false;
static uint64 fc_plan_settings_generation = 0;	/* changes seen, the first included */
static FcPlanSettings fc_seen_plan_settings;
static char *fc_seen_monetary = NULL;	/* lc_monetary, a string: beside them */

static void
fc_plan_settings_note(void)
{
	FcPlanSettings now;

	memset(&now, 0, sizeof(now));	/* the padding too: compared whole */
	now.datestyle = DateStyle;
	now.dateorder = DateOrder;
	now.intervalstyle = IntervalStyle;
	now.timezone = session_timezone;
	now.float_digits = extra_float_digits > 0 ? 1 : extra_float_digits;
	now.bytea_output = bytea_output;
	now.xmlbinary = xmlbinary;
	now.xmloption = xmloption;
	now.transform_null_equals = Transform_null_equals;
	now.quote_all_identifiers = quote_all_identifiers;
	now.array_nulls = Array_nulls;
	if (fc_plan_settings_seen &&
		memcmp(&now, &fc_seen_plan_settings, sizeof(now)) == 0 &&
		strcmp(locale_monetary, fc_seen_monetary) == 0)
		return;
	fc_plan_settings_changed = fc_plan_settings_seen;
	fc_plan_settings_generation++;
	fc_seen_plan_settings = now;
	if (fc_seen_monetary != NULL)
		pfree(fc_seen_monetary);
	fc_seen_monetary = MemoryContextStrdup(TopMemoryContext, locale_monetary);
	fc_plan_settings_seen = true;
}

static void
fc_plan_settings_refresh(void)
{
	fc_plan_settings_note();
	if (fc_plan_settings_changed)
	{
		ResetPlanCache();
		fc_plan_settings_changed = false;
	}
}

/* Is a setting as replay sets it (or not defined in this session)? */
static bool
fc_setting_is(const char *name, const char *value)
{
	const char *current = GetConfigOption(name, true, false);

	return current == NULL || strcmp(current, value) == 0;
}

/*
 * Are all fc_replay_settings as replay sets them, carried or not?  The
 * common case, where a CALL record carries none.  The server's own
 * settings are read from their variables; the others by name.  Not
 * lc_monetary: clusters often run with another, and a change of it counts
 * among the plan settings' (fc_plan_settings_note), so that a call need
 * not look at every setting for it.
 */
static bool
fc_call_settings_at_replay_values(void)
{
	return extra_float_digits > 0 && bytea_output == BYTEA_OUTPUT_HEX &&
		standard_conforming_strings && !Transform_null_equals &&
		!quote_all_identifiers &&
		SessionReplicationRole == SESSION_REPLICATION_ROLE_ORIGIN &&
		Array_nulls && xmlbinary == XMLBINARY_BASE64 &&
		xmloption == XMLOPTION_CONTENT && GinFuzzySearchLimit == 0 &&
		default_toast_compression == TOAST_PGLZ_COMPRESSION && row_security &&
		fc_setting_is("timezone_abbreviations", "Default") &&
		fc_setting_is("plpgsql.check_asserts", "on") &&
		fc_setting_is("plpgsql.extra_warnings", "none") &&
		fc_setting_is("plpgsql.extra_errors", "none") &&
		fc_setting_is("plpgsql.variable_conflict", "error");
}

/*
 * Does lc_monetary read money as C does?  Only input can differ at replay
 * (a literal read as a query is parsed): every other function of money
 * that reads the locale is stable, which a call falls back for.  These
 * are what cash_in() takes from the locale, with its defaults.
 */
static bool
fc_monetary_reads_as_c(void)
{
	struct lconv *conv = PGLC_localeconv();
	int			digits = conv->frac_digits;
	const char *point = conv->mon_decimal_point;

	if (digits < 0 || digits > 10)
		digits = 2;
	return digits == 2 &&
		(point[0] == '\0' || point[1] != '\0' || point[0] == '.') &&
		(conv->mon_thousands_sep[0] == '\0' ||
		 strcmp(conv->mon_thousands_sep, ",") == 0) &&
		(conv->currency_symbol[0] == '\0' ||
		 strcmp(conv->currency_symbol, "$") == 0) &&
		(conv->positive_sign[0] == '\0' || strcmp(conv->positive_sign, "+") == 0) &&
		(conv->negative_sign[0] == '\0' || strcmp(conv->negative_sign, "-") == 0);
}

/* Append a carried setting to buf: its name and value, each after a NUL. */
static void
fc_append_setting(StringInfo buf, const char *name, const char *value)
{
	appendStringInfoChar(buf, '\0');
	appendStringInfoString(buf, name);
	appendStringInfoChar(buf, '\0');
	appendStringInfoString(buf, value);
}

/*
 * Append to buf the carried settings whose value is not replay's, as name
 * and value, each after a NUL.  False if a setting that is not carried
 * has another value than replay's: replay could not repeat the call.
 */
static bool
fc_append_carried_settings(StringInfo buf)
{
	for (int i = 0; i < fc_replay_nsettings; i++)
	{
		const FcReplaySetting *setting = &fc_replay_settings[i];
		const char *current = GetConfigOption(setting->name, true, false);

		if (current == NULL || strcmp(current, setting->value) == 0)
			continue;
		if (extra_float_digits > 0 &&
			strcmp(setting->name, "extra_float_digits") == 0)
			continue;			/* prints as replay's 1 does */
		if (strcmp(setting->name, "lc_monetary") == 0)
			continue;			/* fc_call_capture_session's */
		if (!setting->carried)
			return false;
		fc_append_setting(buf, setting->name, current);
	}
	return true;
}

/*
 * The session state a call's queries are read with that replay restores:
 * the search_path, then, each after a NUL, the settings that decide how
 * date and time literals read ('01/02/2024', a timestamp without a zone,
 * an interval), then the carried settings that are not as replay sets
 * them.  Clients set these per session (drivers often set TimeZone), and
 * replay would otherwise read the literals with the server's.  False if
 * replay could not run the call with this session's settings.
 */
const char *const fc_call_session_settings[FC_CALL_SESSION_NSETTINGS] = {
	"DateStyle", "IntervalStyle", "TimeZone"
};

static bool
fc_call_capture_session(void)
{
	static uint64 session_generation = 0;
	static bool session_carries = false;	/* pairs but lc_monetary's */
	const char *search_path = namespace_search_path ? namespace_search_path : "";
	bool		replay_values = fc_call_settings_at_replay_values();
	StringInfoData buf;

	/* the previous call's, while nothing in it changed (it starts with the path) */
	if (fc_call.session != NULL && replay_values && !session_carries &&
		session_generation == fc_plan_settings_generation &&
		strcmp(fc_call.session, search_path) == 0)
		return true;
	initStringInfo(&buf);
	appendStringInfoString(&buf, search_path);
	for (int i = 0; i < FC_CALL_SESSION_NSETTINGS; i++)
	{
		appendStringInfoChar(&buf, '\0');
		appendStringInfoString(&buf, GetConfigOption(fc_call_session_settings[i], false, false));
	}
	if (!replay_values && !fc_append_carried_settings(&buf))
	{
		pfree(buf.data);
		return false;
	}
	if (strcmp(locale_monetary, "C") != 0 && !fc_monetary_reads_as_c())
		fc_append_setting(&buf, "lc_monetary", locale_monetary);
	session_generation = fc_plan_settings_generation;
	session_carries = !replay_values;
	if (fc_call.session != NULL)
		pfree(fc_call.session);
	fc_call.session = MemoryContextAlloc(TopMemoryContext, buf.len);
	memcpy(fc_call.session, buf.data, buf.len);
	fc_call.session_len = buf.len;
	pfree(buf.data);
	return true;
}

static void
fc_call_begin(FuncExpr *fexpr, bool is_procedure, TransactionId definition,
			  ParamListInfo params)
{
	Oid			funcid = fexpr->funcid;
	List	   *args = fexpr->args;
	bool		settings_replayable;

	fc_plan_settings_refresh();
	fc_call_reset();
	fc_call_set_state(FC_CALL_RUNNING);
	fc_call.funcid = funcid;
	fc_call.is_procedure = is_procedure;
	fc_call.variadic = fexpr->funcvariadic;
	fc_call.inputcollid = fexpr->inputcollid;
	settings_replayable = fc_call_capture_session();
	fc_call.definition = definition;
	fc_call.catalog_epoch = fc_catalog_epoch();
	fc_call.role = GetUserId();
	fc_call.txn_time = GetCurrentTransactionStartTimestamp();
	fc_helpers_begin_call();
	fc_plpgsql_call_begin();
	fc_read_set_begin();

	if (fc_write_set_size() > 0 || fc_pending_changes_exist())
		fc_call_taint(FC_FALLBACK_WRITES_OUTSIDE_CALL);
	if (fc_func_language(funcid) != SQLlanguageId && !fc_plpgsql_plugin_installed())
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
	if (!settings_replayable)
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
	if (!fc_capture_args(args, params))
		fc_call_taint(FC_FALLBACK_ARGUMENTS);
}

/* Is this top-level query `SELECT f(args)` of a registered f? */
static void
fc_maybe_begin_select_call(QueryDesc *qd)
{
	PlannedStmt *pstmt = qd->plannedstmt;
	Result	   *result = (Result *) pstmt->planTree;
	TargetEntry *tle;
	FuncExpr   *fexpr;
	TransactionId definition;

	if (pstmt->commandType != CMD_SELECT || result == NULL || !IsA(result, Result) ||
		result->plan.lefttree != NULL || result->plan.qual != NIL ||
		result->resconstantqual != NULL ||
		list_length(result->plan.targetlist) != 1)
		return;
	tle = linitial_node(TargetEntry, result->plan.targetlist);
	if (!IsA(tle->expr, FuncExpr))
		return;
	fexpr = (FuncExpr *) tle->expr;
	if (fexpr->funcretset || !fc_proc_is_registered(fexpr->funcid, &definition))
		return;
	fc_call_begin(fexpr, false, definition, qd->params);
	fc_call.query = qd;
}

/* User triggers run code no plan shows: replay cannot vouch for it. */
static void
fc_check_triggers(QueryDesc *qd)
{
	ListCell   *lc;

	foreach(lc, qd->estate->es_opened_result_relations)
	{
		ResultRelInfo *rri = (ResultRelInfo *) lfirst(lc);
		TriggerDesc *td = rri->ri_TrigDesc;

		for (int i = 0; td != NULL && i < td->numtriggers; i++)
			if (!td->triggers[i].tgisinternal)
			{
				fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
				return;
			}
	}
}

static void
fc_executor_start(QueryDesc *qd, int eflags)
{
	bool		nested_check = false;

	fc_plan_settings_note();
	fc_folding_note_query(qd);
	fc_probes_statement_start(qd);
	if (fc_in_recovery_worker)
		;						/* replaying calls, not making them */
	else if (fc_nesting == 0 && !(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		fc_maybe_begin_select_call(qd);
	else if (fc_call_active && !fc_call_tainted())
	{
		FcFallback	reason = fc_plan_replayable(qd->plannedstmt);

		fc_call.statement++;

		if (reason != FC_FALLBACK_NONE)
			fc_call_taint(reason);
		else
			fc_read_statement_start(qd, fc_plan_epq_exact(qd->plannedstmt));
		nested_check = true;
	}

	if (prev_executor_start)
		prev_executor_start(qd, eflags);
	else
		standard_ExecutorStart(qd, eflags);

	if (nested_check && !fc_call_tainted())
		fc_check_triggers(qd);
}

static void
fc_executor_run(QueryDesc *qd, ScanDirection direction, uint64 count,
				bool execute_once)
{
	/*
	 * Rows a query inside the call hands on in the plan's order, which
	 * replay may not repeat: a SELECT run for its first rows only (SELECT
	 * ... INTO without STRICT, FETCH, a FOR loop's batches), and the rows
	 * of INSERT/UPDATE/DELETE ... RETURNING, or of a SELECT over one in
	 * WITH, that something reads in turn (a FOR loop, a cursor, an SQL
	 * function's result): those run to the end at once.  Two rows is how
	 * PL/pgSQL runs STRICT and RETURNING INTO: a second row is an error
	 * there, so the one row is the only one.
	 */
	if (count != 2 && fc_call_active && qd != fc_call.query &&
		(qd->operation == CMD_SELECT ?
		 count > 0 || qd->plannedstmt->hasModifyingCTE :
		 qd->plannedstmt->hasReturning) &&
		!fc_in_recovery_worker && !fc_call_tainted() &&
		!fc_plan_single_row(qd->plannedstmt))
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);

	fc_nesting++;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(qd, direction, count, execute_once);
		else
			standard_ExecutorRun(qd, direction, count, execute_once);
	}
	PG_CATCH();
	{
		fc_nesting--;
		if (fc_call.query == qd)
			fc_call_reset();	/* the call failed: it wrote nothing */
		PG_RE_THROW();
	}
	PG_END_TRY();
	fc_nesting--;

	/* a Result plan computes its one row, the call, in its first run */
	if (fc_call.query == qd && fc_call.state == FC_CALL_RUNNING)
		fc_call_set_state(FC_CALL_DONE);
}

static void
fc_executor_finish(QueryDesc *qd)
{
	fc_nesting++;
	PG_TRY();
	{
		if (prev_executor_finish)
			prev_executor_finish(qd);
		else
			standard_ExecutorFinish(qd);
	}
	PG_CATCH();
	{
		fc_nesting--;
		if (fc_call.query == qd)
			fc_call_reset();
		PG_RE_THROW();
	}
	PG_END_TRY();
	fc_nesting--;
}

static void
fc_executor_end(QueryDesc *qd)
{
	fc_probes_statement_end(qd);
	fc_read_statement_end(qd);
	if (fc_call.query == qd && fc_call.state == FC_CALL_RUNNING)
	{
		fc_call_set_state(FC_CALL_DONE);
		fc_call.query = NULL;
	}
	if (prev_executor_end)
		prev_executor_end(qd);
	else
		standard_ExecutorEnd(qd);
}

/* A utility statement run by a call: only a CALL replay can repeat. */
static void
fc_check_nested_utility(Node *stmt)
{
	if (IsA(stmt, CallStmt))
	{
		FuncExpr   *fexpr = ((CallStmt *) stmt)->funcexpr;

		if (!fc_function_replayable(fexpr->funcid) ||
			!fc_expr_replayable((Node *) fexpr->args))
			fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
	}
	else
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
}

/*
 * Does EXECUTE run its prepared statement as the client's own, as Bind and
 * Execute of the protocol do?  Then a prepared SELECT f($1) is a call.
 * Only with constant parameters: evaluating others could run queries
 * before the call begins.
 */
static bool
fc_execute_at_top(Node *stmt)
{
	ListCell   *lc;

	if (!IsA(stmt, ExecuteStmt))
		return false;
	foreach(lc, ((ExecuteStmt *) stmt)->params)
	{
		Node	   *param = (Node *) lfirst(lc);

		if (IsA(param, TypeCast))
			param = ((TypeCast *) param)->arg;
		if (!IsA(param, A_Const))
			return false;
	}
	return true;
}

static void
fc_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	bool		is_call = false;
	int			depth = 1;
	int			creating = IsA(stmt, CreateFunctionStmt) ? 1 : 0;

	if (fc_in_recovery_worker)
		;						/* replaying calls, not making them */
	else if (fc_nesting == 0 && IsA(stmt, CallStmt))
	{
		FuncExpr   *fexpr = ((CallStmt *) stmt)->funcexpr;
		TransactionId definition;

		if (fexpr != NULL && fc_proc_is_registered(fexpr->funcid, &definition))
		{
			fc_call_begin(fexpr, true, definition, params);
			is_call = true;
		}
	}
	else if (fc_nesting == 0 && fc_execute_at_top(stmt))
		depth = 0;
	else if (fc_call_active && !fc_call_tainted())
		fc_check_nested_utility(stmt);

	fc_nesting += depth;
	fc_creating_routines += creating;
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, queryString, readOnlyTree, context,
								 params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		fc_nesting -= depth;
		fc_creating_routines -= creating;
		if (is_call)
			fc_call_reset();
		PG_RE_THROW();
	}
	PG_END_TRY();
	fc_nesting -= depth;
	fc_creating_routines -= creating;
	if (is_call && fc_call.state == FC_CALL_RUNNING)
		fc_call_set_state(FC_CALL_DONE);
	fc_folding_after_utility(stmt);
}

/*
 * How to log the committing transaction: -1 if it made no registered
 * call, else FC_FALLBACK_NONE for a call that passed every check so far
 * (the read set is validated later, after the CSN), or the reason not to.
 * Heap writes elsewhere in the transaction do not matter: WAL keeps them,
 * and the record is replayed only if PostgreSQL's commit log says so.
 * Tables created, truncated or dropped do: replay would not see them as
 * the call did.
 */
int
fc_call_verdict_at_commit(bool storage_changes)
{
	HeapTuple	tup;

	if (fc_call.state == FC_CALL_NONE)
		return -1;
	if (fc_call.state == FC_CALL_RUNNING)
		fc_call_taint(FC_FALLBACK_TRANSACTION_CONTROL);
	if (storage_changes)
		fc_call_taint(FC_FALLBACK_WRITES_OUTSIDE_CALL);
	/* made before the call or during it, a plan it ran may keep such values */
	if (fc_plans_hold_folded_values())
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
	if (fc_call.taint == FC_FALLBACK_NONE &&
		fc_call_record_size() > FC_LOG_MAX_RECORD)
		fc_call_taint(FC_FALLBACK_ARGUMENTS);
	if (fc_call.taint == FC_FALLBACK_NONE)
	{
		tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fc_call.funcid));
		if (!HeapTupleIsValid(tup))
			fc_call_taint(FC_FALLBACK_REDEFINED);
		else
		{
			if (HeapTupleHeaderGetRawXmin(tup->t_data) != fc_call.definition)
				fc_call_taint(FC_FALLBACK_REDEFINED);
			ReleaseSysCache(tup);
		}
	}
	return (int) fc_call.taint;
}

/* No catalog change overlapped the call (see catalog_watch.c). */
bool
fc_call_catalog_unchanged(void)
{
	return !fc_catalog_changed_since(fc_call.catalog_epoch);
}

/*
 * An insert of the call was given this slot.  Replay must give it the same
 * one, and takes the slots in the order they were handed out per table; a
 * query that inserts several rows into one table does so in the order its
 * plan produces them, which replay could plan differently.
 */
void
fc_call_note_slot(const void *tbl, Oid spcid, Oid relnode, uint64 slotno)
{
	FcCallSlot *cs;

	if (fc_call_tainted())
		return;
	for (int i = fc_call.nslots - 1; i >= 0 && fc_call.slots[i].statement == fc_call.statement; i--)
		if (fc_call.slots[i].tbl == tbl)
		{
			fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
			return;
		}
	if (fc_call.nslots == fc_call.slots_cap)
	{
		int			cap = Max(16, fc_call.slots_cap * 2);

		fc_call.slots = fc_call.slots == NULL ?
			MemoryContextAlloc(TopMemoryContext, cap * sizeof(FcCallSlot)) :
			repalloc(fc_call.slots, cap * sizeof(FcCallSlot));
		fc_call.slots_cap = cap;
	}
	if (fc_call.nslots >= PG_UINT16_MAX)
	{
		fc_call_taint(FC_FALLBACK_ARGUMENTS);
		return;
	}
	cs = &fc_call.slots[fc_call.nslots++];
	cs->slot.spcid = spcid;
	cs->slot.relnode = relnode;
	cs->slot.slotno = slotno;
	cs->tbl = tbl;
	cs->statement = fc_call.statement;
}

/* Size of the call's CALL record. */
uint32
fc_call_record_size(void)
{
	return fc_log_call_size(fc_call.nslots, fc_call.nargs, fc_call.args_len,
							fc_call.session_len);
}

/*
 * Fill in the CALL record at rec (fc_call_record_size() bytes, header
 * already begun), given the digest of what the call wrote.
 */
void
fc_call_fill_record(fc_log_header *rec, uint64 digest, uint32 nwritten)
{
	char	   *pos = (char *) rec + FC_LOG_HEADER_SIZE;
	fc_log_call *call = (fc_log_call *) pos;
	Size		sp_len = fc_call.session_len;
	Size		argdesc_len = fc_call.nargs * sizeof(fc_log_call_arg);

	memset(call, 0, sizeof(fc_log_call));
	call->funcid = fc_call.funcid;
	call->definition = fc_call.definition;
	call->roleid = fc_call.role;
	call->inputcollid = fc_call.inputcollid;
	call->txn_time = fc_call.txn_time;
	call->seed = fc_call_seed;
	call->digest = digest;
	call->nwritten = nwritten;
	call->nargs = fc_call.nargs;
	call->is_procedure = fc_call.is_procedure;
	call->variadic = fc_call.variadic;
	call->args_len = fc_call.args_len;
	call->search_path_len = sp_len;
	pos += sizeof(fc_log_call);
	for (int i = 0; i < fc_call.nslots; i++)
	{
		memcpy(pos, &fc_call.slots[i].slot, sizeof(fc_log_call_slot));
		pos += sizeof(fc_log_call_slot);
	}
	memset(pos, 0, FC_LOG_ALIGNED(argdesc_len));
	memcpy(pos, fc_call.argdesc, argdesc_len);
	pos += FC_LOG_ALIGNED(argdesc_len);
	memset(pos, 0, FC_LOG_ALIGNED(fc_call.args_len));
	if (fc_call.args_len > 0)
		memcpy(pos, fc_call.args, fc_call.args_len);
	pos += FC_LOG_ALIGNED(fc_call.args_len);
	memset(pos, 0, FC_LOG_ALIGNED(sp_len));
	memcpy(pos, fc_call.session, sp_len);
	rec->nentries = fc_call.nslots;
	rec->len = fc_call_record_size();
}

/* The call's transaction committed (the first, if it commits inside). */
void
fc_call_count(FcFallback verdict)
{
	if (fc_call.state == FC_CALL_NONE || fc_call.counted)
		return;
	fc_proc_count(fc_call.funcid, verdict);
	fc_call.counted = true;
}

/*
 * PREPARE TRANSACTION after the call: COMMIT PREPARED logs its rows, as
 * row images (txn/prepared.c).
 */
void
fc_call_count_prepared(void)
{
	fc_call_taint(FC_FALLBACK_PREPARED);
	fc_call_count(fc_call.taint);
}

/*
 * The transaction ended.  A CALL that commits or rolls back inside keeps
 * running into the next transaction, as one that cannot be a CALL record.
 */
void
fc_call_at_xact_end(void)
{
	if (fc_call.state == FC_CALL_RUNNING)
	{
		fc_call_taint(FC_FALLBACK_TRANSACTION_CONTROL);
		return;
	}
	fc_call_reset();
}

/* An error caught inside the call, by an exception block. */
void
fc_call_at_subxact_abort(void)
{
	if (fc_call_active)
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);
}

void
fc_register_call_hooks(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = fc_executor_start;
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = fc_executor_run;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = fc_executor_finish;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = fc_executor_end;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = fc_process_utility;
	fc_register_folding_hooks();
	fc_procs_register_callbacks();
	fc_install_plpgsql_plugin();
}
