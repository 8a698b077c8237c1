/*-------------------------------------------------------------------------
 *
 * determinism.c
 *	  Would replaying a registered call compute the same writes?
 *
 * Replay re-executes the call against exactly the rows it read (the read
 * set checks that), so what remains is everything else a routine can
 * consult.  Allowed inside a call:
 *
 * - immutable functions and operators, registered routines, and the
 *   helpers fastckpt_txn_time() and fastckpt_random(), which replay with
 *   the logged transaction time and seed;
 * - CURRENT_USER and friends (replay runs as the calling role);
 * - plan nodes listed below, over fastckpt tables only.
 *
 * Anything else (now(), random(), nextval(), a heap table, a user trigger,
 * parallel query, a plan node not listed) makes the call fall back to row
 * images.  Queries are checked as the executor starts them, cached plans
 * included.  PL/pgSQL evaluates simple expressions (x := now()) without
 * the executor, so a PL/pgSQL plugin checks each statement's expressions
 * before and after it runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/nbtree.h"
#include "catalog/namespace.h"
#include "catalog/pg_language.h"
#include "catalog/pg_constraint.h"
#include "catalog/indexing.h"
#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "plpgsql.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "access/fastckpt_am.h"
#include "procs/procs.h"
#include "store/table_store.h"
#include "txn/read_set.h"

static PLpgSQL_plugin fc_plpgsql_plugin;
static PLpgSQL_plugin **fc_plpgsql_plugin_ptr = NULL;

/*
 * Stable built-ins that depend on no other setting than those a CALL record
 * carries and replay restores (DateStyle, IntervalStyle, TimeZone): date
 * and time output, casts between the time types, and arithmetic, fields
 * and truncation in the session's time zone.  Not the input functions:
 * 'now' reads the clock.
 */
static bool
fc_reads_carried_settings_only(Oid funcid)
{
	switch (funcid)
	{
		case F_DATE_OUT:
		case F_TIMESTAMP_OUT:
		case F_TIMESTAMPTZ_OUT:
		case F_INTERVAL_OUT:
		case F_DATE_TIMESTAMPTZ:
		case F_TIME_TIMESTAMPTZ:
		case F_TIMETZ_TIMESTAMPTZ:
		case F_TIMESTAMP_TIMESTAMPTZ:
		case F_TIMESTAMPTZ_TIMESTAMP:
		case F_TIMESTAMPTZ_DATE:
		case F_TIMESTAMPTZ_DATE_TIME:
		case F_TIMESTAMPTZ_PL_INTERVAL:
		case F_TIMESTAMPTZ_MI_INTERVAL:
		case F_AGE_TIMESTAMPTZ_TIMESTAMPTZ:
		case F_DATE_PART_TEXT_TIMESTAMPTZ:
		case F_EXTRACT_TEXT_TIMESTAMPTZ:
		case F_DATE_TRUNC_TEXT_TIMESTAMPTZ:
			return true;
		default:
			return false;
	}
}

/* A function of the session's temporary schema ends with the session. */
static bool
fc_function_is_temporary(Oid funcid, void *context)
{
	return funcid >= FirstNormalObjectId && isAnyTempNamespace(get_func_namespace(funcid));
}

bool
fc_function_replayable(Oid funcid)
{
	if (fc_function_is_temporary(funcid, NULL))
		return false;
	if (func_volatile(funcid) == PROVOLATILE_IMMUTABLE ||
		fc_reads_carried_settings_only(funcid))
		return true;
	if (funcid == fc_helper_oid("fastckpt_txn_time") ||
		funcid == fc_helper_oid("fastckpt_random"))
		return true;
	return fc_proc_is_registered(funcid, NULL);
}

/*
 * With a plan check as context, note a function whose result depends on
 * its calls before: fastckpt_random(), and a volatile registered routine,
 * which may write, or read what the statement calling it has written so
 * far.  Called once per row, they hand their results to rows in the order
 * the plan makes them (fc_plan_check).
 */
static bool
fc_function_not_replayable(Oid funcid, void *context)
{
	if (!fc_function_replayable(funcid))
		return true;
	if (context != NULL &&
		(funcid == fc_helper_oid("fastckpt_random") ||
		 (func_volatile(funcid) == PROVOLATILE_VOLATILE &&
		  fc_proc_is_registered(funcid, NULL))))
		*(bool *) context = true;
	return false;
}

/*
 * Do equal values of this type (under this collation) always look the
 * same?  B-tree's "equalimage" says so: true for integers, dates, text
 * under a deterministic collation; false for numeric (1.0 = 1.00),
 * floats (0 = -0), text under a case-insensitive collation.  Where it is
 * false, which of several equal values an operation hands on depends on
 * the order rows come in.
 */
static bool
fc_equal_means_identical(Oid typid, Oid collid)
{
	Oid			opclass = GetDefaultOpClass(typid, BTREE_AM_OID);
	Oid			opcintype;
	Oid			proc;

	if (!OidIsValid(opclass))
		return false;
	if (type_is_collatable(typid) && !OidIsValid(collid))
		return false;
	opcintype = get_opclass_input_type(opclass);
	proc = get_opfamily_proc(get_opclass_family(opclass), opcintype, opcintype,
							 BTEQUALIMAGE_PROC);
	if (!OidIsValid(proc))
		return false;
	return DatumGetBool(OidFunctionCall1Coll(proc, collid, ObjectIdGetDatum(opcintype)));
}

/*
 * Is the aggregate's result the same whatever order its rows come in?
 * Replay may plan the query otherwise (other settings, fresh statistics)
 * and feed the rows in another order.  Only built-in aggregates known to
 * be: string_agg, array_agg and floating-point sums, for example, are not.
 */
static bool
fc_aggregate_order_insensitive(Aggref *agg)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	char		name[NAMEDATALEN];
	bool		builtin;
	Oid			argtype = agg->aggargtypes != NIL ? linitial_oid(agg->aggargtypes) : InvalidOid;

	if (agg->aggkind != AGGKIND_NORMAL)
		return false;
	if (agg->aggdistinct != NIL)
	{
		ListCell   *lc;

		/* which of several equal values is kept depends on the order */
		foreach(lc, agg->aggargtypes)
			if (!fc_equal_means_identical(lfirst_oid(lc), agg->inputcollid))
				return false;
	}
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(agg->aggfnoid));
	if (!HeapTupleIsValid(tup))
		return false;
	proc = (Form_pg_proc) GETSTRUCT(tup);
	builtin = proc->pronamespace == PG_CATALOG_NAMESPACE;
	strlcpy(name, NameStr(proc->proname), sizeof(name));
	ReleaseSysCache(tup);
	if (!builtin)
		return false;

	if (strcmp(name, "count") == 0 ||
		strcmp(name, "bool_and") == 0 || strcmp(name, "bool_or") == 0 ||
		strcmp(name, "every") == 0 || strcmp(name, "bit_and") == 0 ||
		strcmp(name, "bit_or") == 0 || strcmp(name, "bit_xor") == 0)
		return true;
	if (strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0)
		return argtype == INT2OID || argtype == INT4OID || argtype == INT8OID ||
			argtype == NUMERICOID || argtype == INTERVALOID || argtype == MONEYOID;
	if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
		return fc_equal_means_identical(argtype, agg->inputcollid);
	return false;
}

static bool fc_domain_checks_bad(Oid typid, void *context);

/*
 * Is the type one of a temporary schema (a temporary table's row type)?
 * It goes with its session: replay finds no such type, or, by name, a
 * lasting one that the temporary one hid.
 */
bool
fc_type_is_temporary(Oid typid)
{
	HeapTuple	tup;
	bool		temp = false;

	if (!OidIsValid(typid) || typid < FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (HeapTupleIsValid(tup))
	{
		temp = isAnyTempNamespace(((Form_pg_type) GETSTRUCT(tup))->typnamespace);
		ReleaseSysCache(tup);
	}
	return temp;
}

/* The type an expression node makes, for the nodes that name one. */
static Oid
fc_node_named_type(Node *node)
{
	switch (nodeTag(node))
	{
		case T_Const:
		case T_Var:
		case T_Param:
		case T_RowExpr:
		case T_FieldSelect:
		case T_RelabelType:
		case T_CoerceViaIO:
		case T_ArrayCoerceExpr:
		case T_ConvertRowtypeExpr:
		case T_ArrayExpr:
		case T_CoerceToDomain:
			return exprType(node);
		default:
			return InvalidOid;
	}
}

/*
 * A reg* constant: a name the parser looked up, along a path where the
 * session's temporary schema comes first.  Of a temporary object?
 */
static bool
fc_const_names_temporary(Const *c)
{
	Oid			obj = c->constisnull ? InvalidOid : DatumGetObjectId(c->constvalue);

	if (!OidIsValid(obj))
		return false;
	switch (c->consttype)
	{
		case REGCLASSOID:
			return isAnyTempNamespace(get_rel_namespace(obj));
		case REGTYPEOID:
			return fc_type_is_temporary(obj);
		case REGPROCOID:
		case REGPROCEDUREOID:
			return isAnyTempNamespace(get_func_namespace(obj));
		case REGNAMESPACEOID:
			return isAnyTempNamespace(obj);
		default:
			return false;
	}
}

static bool
fc_temporary_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (fc_type_is_temporary(fc_node_named_type(node)) ||
		(IsA(node, Const) && fc_const_names_temporary((Const *) node)) ||
		check_functions_in_node(node, fc_function_is_temporary, NULL))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, fc_temporary_walker, context, 0);
	return expression_tree_walker(node, fc_temporary_walker, context);
}

/*
 * Does a statement name a temporary type or function, or hold a reg*
 * constant of a temporary object?  The planner may simplify a cast away
 * ((ROW(...)::tt).a is a) or inline a function, but replay parses the
 * statement again.
 */
bool
fc_query_names_temporary(Node *node)
{
	return fc_temporary_walker(node, NULL);
}

static bool
fc_expr_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (fc_type_is_temporary(fc_node_named_type(node)))
		return true;
	if (check_functions_in_node(node, fc_function_not_replayable, context))
		return true;
	if (IsA(node, Aggref) && !fc_aggregate_order_insensitive((Aggref *) node))
		return true;
	if (IsA(node, WindowFunc))
		return true;			/* ties in the window's order, frames */
	if (IsA(node, SubPlan) && ((SubPlan *) node)->subLinkType == ARRAY_SUBLINK)
		return true;			/* ARRAY(SELECT ...): elements in the plan's order */
	if (IsA(node, Var) && ((Var *) node)->varattno < 0 &&
		((Var *) node)->varattno != SelfItemPointerAttributeNumber &&
		((Var *) node)->varattno != TableOidAttributeNumber)
		return true;			/* xmin, xmax, cmin, cmax: other xids at replay */
	if (IsA(node, SQLValueFunction))
	{
		switch (((SQLValueFunction *) node)->op)
		{
			case SVFOP_CURRENT_ROLE:
			case SVFOP_CURRENT_USER:
			case SVFOP_USER:
			case SVFOP_CURRENT_CATALOG:
				return false;
			case SVFOP_CURRENT_SCHEMA:
				{
					/*
					 * pg_temp named first in search_path: the session's own
					 * pg_temp_N, another one (or none) at replay
					 */
					List	   *path = fetch_search_path(false);
					bool		temp = path != NIL &&
						isAnyTempNamespace(linitial_oid(path));

					list_free(path);
					return temp;
				}
			default:
				return true;	/* the clock, or the session's user */
		}
	}
	if (IsA(node, NextValueExpr))
		return true;
	/* WHERE CURRENT OF: a cursor the client may have opened and moved */
	if (IsA(node, CurrentOfExpr))
		return true;
	if (IsA(node, CoerceToDomain) &&
		fc_domain_checks_bad(((CoerceToDomain *) node)->resulttype, context))
		return true;
	if (IsA(node, Query))
		return true;			/* sublinks are planned as SubPlans */
	return expression_tree_walker(node, fc_expr_walker, context);
}

/*
 * A user's LANGUAGE sql function, which the planner may inline (one with
 * BEGIN ATOMIC too, and then what its body calls).
 */
static bool
fc_function_inlines_sql(Oid funcid, void *context)
{
	HeapTuple	tup;
	bool		result = false;

	if (funcid < FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_proc) GETSTRUCT(tup))->prolang == SQLlanguageId;
		ReleaseSysCache(tup);
	}
	return result;
}

static bool
fc_names_inlined_sql_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, fc_function_inlines_sql, NULL))
		return true;
	return expression_tree_walker(node, fc_names_inlined_sql_walker, context);
}

/*
 * Does a CHECK constraint of this domain (or of a domain it is over) call a
 * user's LANGUAGE sql function?  The type cache plans a domain's checks
 * once a session, inlining such a function: a clock literal in its body,
 * or in the body of one it calls, is kept with them, beyond the call that
 * planned them, and the planned checks no longer name the function.
 */
static bool
fc_domain_checks_inline_sql(Oid typid)
{
	Relation	conrel = NULL;
	bool		found = false;

	while (!found && get_typtype(typid) == TYPTYPE_DOMAIN)
	{
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		if (conrel == NULL)
			conrel = table_open(ConstraintRelationId, AccessShareLock);
		ScanKeyInit(&key, Anum_pg_constraint_contypid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(typid));
		scan = systable_beginscan(conrel, ConstraintTypidIndexId, true, NULL, 1, &key);
		while (!found && HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			bool		isnull;
			Datum		bin;

			if (((Form_pg_constraint) GETSTRUCT(tup))->contype != CONSTRAINT_CHECK)
				continue;
			bin = heap_getattr(tup, Anum_pg_constraint_conbin,
							   RelationGetDescr(conrel), &isnull);
			found = !isnull &&
				fc_names_inlined_sql_walker(stringToNode(TextDatumGetCString(bin)), NULL);
		}
		systable_endscan(scan);
		/* the domain this one is over, if any */
		tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
		if (!HeapTupleIsValid(tup))
			break;
		typid = ((Form_pg_type) GETSTRUCT(tup))->typbasetype;
		ReleaseSysCache(tup);
	}
	if (conrel != NULL)
		table_close(conrel, AccessShareLock);
	return found;
}

/*
 * A domain's CHECK constraints (its base domains' included) run when a
 * value is coerced to it or stored, outside what the expression or plan
 * shows.  Context as fc_expr_walker's.
 */
static bool
fc_domain_checks_bad(Oid typid, void *context)
{
	DomainConstraintRef ref;
	MemoryContext refctx;
	ListCell   *lc;
	bool		bad = false;

	if (get_typtype(typid) != TYPTYPE_DOMAIN)
		return false;
	if (fc_domain_checks_inline_sql(typid))
		return true;
	/* the reference lives on this stack: release it before returning */
	refctx = AllocSetContextCreate(CurrentMemoryContext, "fastckpt domain checks",
								   ALLOCSET_SMALL_SIZES);
	InitDomainConstraintRef(typid, &ref, refctx, false);
	foreach(lc, ref.constraints)
	{
		DomainConstraintState *con = (DomainConstraintState *) lfirst(lc);

		if (con->constrainttype == DOM_CONSTRAINT_CHECK &&
			fc_expr_walker((Node *) con->check_expr, context))
			bad = true;
	}
	MemoryContextDelete(refctx);
	return bad;
}

/* Can this expression be evaluated again at replay with the same result? */
bool
fc_expr_replayable(Node *node)
{
	return !fc_expr_walker(node, NULL);
}

/* Can this index prove a key unique: valid, immediate, unique B-tree? */
static bool
fc_index_is_unique_key(Relation index)
{
	return index->rd_index->indisunique && index->rd_index->indimmediate &&
		index->rd_index->indisvalid && index->rd_rel->relam == BTREE_AM_OID;
}

/*
 * Do the quals pin every key column of the index to one value (column =
 * expression of no column, by the column's B-tree equality and collation)?
 * Index quals name the columns by index column number (varno INDEX_VAR),
 * a scan's filter by table column (varno scanrelid).
 */
static bool
fc_quals_pin_column(List *quals, Relation index, Index varno, int k)
{
	AttrNumber	attnum = varno == INDEX_VAR ? k + 1 : index->rd_index->indkey.values[k];
	ListCell   *lc;

	if (attnum == 0)
		return false;			/* an expression column */
	foreach(lc, quals)
	{
		OpExpr	   *op = (OpExpr *) lfirst(lc);
		Var		   *var;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		var = (Var *) linitial(op->args);
		if (IsA(var, RelabelType))
			var = (Var *) ((RelabelType *) var)->arg;
		if (IsA(var, Var) && var->varno == varno && var->varattno == attnum &&
			!contain_var_clause(lsecond(op->args)) &&
			(!OidIsValid(op->inputcollid) ||
			 op->inputcollid == index->rd_indcollation[k]) &&
			get_op_opfamily_strategy(op->opno, index->rd_opfamily[k]) ==
			BTEqualStrategyNumber)
			return true;
	}
	return false;
}

static bool
fc_quals_pin_key(List *quals, Relation index, Index varno)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);

	for (int k = 0; k < nkeys; k++)
		if (!fc_quals_pin_column(quals, index, varno, k))
			return false;
	return true;
}

/*
 * Does the index scan fetch one row by its whole unique key?  Then a row
 * it returns is a row read; any other index scan may miss rows inserted
 * meanwhile and reads the whole table.
 */
static bool
fc_unique_point_lookup(Oid indexid, List *indexqual)
{
	/* the executor locks indexes only as it starts the scan */
	Relation	index = index_open(indexid, AccessShareLock);
	bool		result;

	result = fc_index_is_unique_key(index) && fc_quals_pin_key(indexqual, index, INDEX_VAR);
	index_close(index, NoLock);
	return result;
}

/*
 * Does a Limit keep the first value of one column that its input returns
 * in order: at most one row, of that column alone, from a B-tree index
 * scan whose earlier key columns the index quals pin?  Then ties hand on
 * equal values, and where the index's equality means identical (see
 * fc_equal_means_identical) the value is the same whatever the order among
 * them.  This is how the planner runs min() and max() of an indexed column,
 * and ORDER BY col LIMIT 1 of that column.
 */
static bool
fc_limit_first_value(Limit *limit)
{
	Plan	   *scan = limit->plan.lefttree;
	Const	   *count = (Const *) limit->limitCount;
	Oid			indexid;
	List	   *indexqual;
	TargetEntry *tle;
	Var		   *var;
	Relation	index;
	Oid			equalimage;
	bool		result = false;

	if (limit->limitOffset != NULL || limit->limitOption != LIMIT_OPTION_COUNT ||
		count == NULL || !IsA(count, Const) || count->consttype != INT8OID ||
		count->constisnull || DatumGetInt64(count->constvalue) > 1 ||
		scan == NULL || list_length(scan->targetlist) != 1)
		return false;
	if (IsA(scan, IndexScan) && ((IndexScan *) scan)->indexorderby == NIL)
	{
		indexid = ((IndexScan *) scan)->indexid;
		indexqual = ((IndexScan *) scan)->indexqual;
	}
	else if (IsA(scan, IndexOnlyScan) && ((IndexOnlyScan *) scan)->indexorderby == NIL)
	{
		indexid = ((IndexOnlyScan *) scan)->indexid;
		indexqual = ((IndexOnlyScan *) scan)->indexqual;
	}
	else
		return false;
	tle = linitial_node(TargetEntry, scan->targetlist);
	var = (Var *) tle->expr;
	if (!IsA(var, Var))
		return false;

	/* the executor locks indexes only as it starts the scan */
	index = index_open(indexid, AccessShareLock);
	if (index->rd_rel->relam == BTREE_AM_OID)
	{
		int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);

		for (int k = 0; k < nkeys; k++)
		{
			bool		returned = IsA(scan, IndexOnlyScan) ?
				var->varno == INDEX_VAR && var->varattno == k + 1 :
				var->varno == ((Scan *) scan)->scanrelid &&
				index->rd_index->indkey.values[k] != 0 &&
				var->varattno == index->rd_index->indkey.values[k];

			if (returned)
			{
				equalimage = get_opfamily_proc(index->rd_opfamily[k], index->rd_opcintype[k],
											   index->rd_opcintype[k], BTEQUALIMAGE_PROC);
				result = OidIsValid(equalimage) &&
					DatumGetBool(OidFunctionCall1Coll(equalimage, index->rd_indcollation[k],
													  ObjectIdGetDatum(index->rd_opcintype[k])));
				break;
			}
			if (!fc_quals_pin_column(indexqual, index, INDEX_VAR, k))
				break;
		}
	}
	index_close(index, NoLock);
	return result;
}

typedef struct FcPlanCheck
{
	PlannedStmt *pstmt;
	bool		order_dependent;	/* fc_function_not_replayable */
	FcFallback	reason;
	List	   *table_reads;	/* OIDs of tables read whole by index scans */
} FcPlanCheck;

/*
 * An index scan that is not a point lookup reads its whole table: collect
 * the table, for fc_plan_note_read.
 */
static void
fc_index_scan_read(FcPlanCheck *check, Index scanrelid, Oid indexid, List *indexqual)
{
	RangeTblEntry *rte = rt_fetch(scanrelid, check->pstmt->rtable);

	if (!fc_unique_point_lookup(indexid, indexqual))
		check->table_reads = list_append_unique_oid(check->table_reads, rte->relid);
}

static bool
fc_exprs_bad(FcPlanCheck *check, List *exprs)
{
	if (fc_expr_walker((Node *) exprs, &check->order_dependent))
	{
		check->reason = FC_FALLBACK_NONDETERMINISTIC;
		return true;
	}
	return false;
}

/*
 * Quals run for every row a node reads, not only for those it returns: how
 * many calls of an order-dependent function (fastckpt_random(), a volatile
 * registered routine) they make depends on the plan, which replay makes
 * anew, even in a statement that writes one row.
 */
static bool
fc_quals_bad(FcPlanCheck *check, List *quals)
{
	bool		order_dependent = false;

	if (fc_expr_walker((Node *) quals, &order_dependent) || order_dependent)
	{
		check->reason = FC_FALLBACK_NONDETERMINISTIC;
		return true;
	}
	return false;
}

static bool fc_plan_walk(FcPlanCheck *check, Plan *plan);
static bool fc_plan_one_row(PlannedStmt *pstmt, Plan *plan);

/*
 * A unique or exclusion index that writers check their rows against but
 * that is not valid (a concurrent build that failed) holds only some of
 * the rows, and startup rebuilds it from all of them: replay could meet a
 * conflict the call did not.
 */
static bool
fc_has_unfinished_unique_index(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;

		if (!HeapTupleIsValid(tup))
			continue;
		index = (Form_pg_index) GETSTRUCT(tup);
		found = index->indisready && !index->indisvalid &&
			(index->indisunique || index->indisexclusion);
		ReleaseSysCache(tup);
		if (found)
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * The table's CHECK constraints and its columns' domain checks run when a
 * row is stored, outside the plan: now() in one of them may pass at the
 * call and fail at replay.  A partitioned table's rows go to its
 * partitions, whose constraints count too.  So does a unique index the
 * rows are checked against but that is not valid (above).
 */
static bool
fc_stored_checks_bad(FcPlanCheck *check, Oid relid)
{
	List	   *relids = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ?
		find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	ListCell   *lc;
	bool		bad = false;

	foreach(lc, relids)
	{
		Relation	rel = RelationIdGetRelation(lfirst_oid(lc));
		TupleDesc	desc;

		if (!RelationIsValid(rel))
			continue;
		desc = RelationGetDescr(rel);
		for (int i = 0; !bad && desc->constr != NULL && i < desc->constr->num_check; i++)
			bad = fc_expr_walker(stringToNode(desc->constr->check[i].ccbin),
								 &check->order_dependent);
		for (int i = 0; !bad && i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			bad = !att->attisdropped && fc_domain_checks_bad(att->atttypid, &check->order_dependent);
		}
		if (!bad)
			bad = fc_has_unfinished_unique_index(rel);
		RelationClose(rel);
		if (bad)
			break;
	}
	list_free(relids);
	return bad;
}

/* Does the plan scan one of the relations (range table indexes)? */
static bool
fc_plan_scans_any(Plan *plan, List *relids)
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			return list_member_int(relids, (int) ((Scan *) plan)->scanrelid);
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				if (fc_plan_scans_any(lfirst(lc), relids))
					return true;
			return false;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				if (fc_plan_scans_any(lfirst(lc), relids))
					return true;
			return false;
		case T_SubqueryScan:
			return fc_plan_scans_any(((SubqueryScan *) plan)->subplan, relids);
		default:
			return fc_plan_scans_any(plan->lefttree, relids) ||
				fc_plan_scans_any(plan->righttree, relids);
	}
}

/*
 * UPDATE ... FROM: a target row that joins several rows is updated with
 * the first of them, which depends on the plan's order (so is what DELETE
 * ... USING returns of the other rows).  Safe joins: semi and anti joins,
 * and joins of the target (outer side) to rows the planner proved unique
 * for each of its rows, or to at most one row.
 */
static bool
fc_update_joins_once(PlannedStmt *pstmt, Plan *plan, List *targets)
{
	ListCell   *lc;

	if (plan == NULL)
		return true;
	switch (nodeTag(plan))
	{
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			{
				Join	   *join = (Join *) plan;
				Plan	   *inner = plan->righttree;

				if (inner != NULL && IsA(inner, Hash))
					inner = inner->lefttree;
				if (join->jointype != JOIN_SEMI && join->jointype != JOIN_ANTI &&
					(fc_plan_scans_any(plan->righttree, targets) ||
					 (fc_plan_scans_any(plan->lefttree, targets) && !join->inner_unique &&
					  !fc_plan_one_row(pstmt, inner))))
					return false;
				break;
			}
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				if (!fc_update_joins_once(pstmt, lfirst(lc), targets))
					return false;
			return true;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				if (!fc_update_joins_once(pstmt, lfirst(lc), targets))
					return false;
			return true;
		default:
			break;
	}
	return fc_update_joins_once(pstmt, plan->lefttree, targets) &&
		fc_update_joins_once(pstmt, plan->righttree, targets);
}

/*
 * A grouping or de-duplicating node passes on one row of each group: the
 * group's values must not depend on which row came first.
 */
static bool
fc_group_values_identical(Plan *input, int ncols, const AttrNumber *cols,
						  const Oid *collations)
{
	for (int i = 0; i < ncols; i++)
	{
		TargetEntry *tle = get_tle_by_resno(input->targetlist, cols[i]);

		if (tle == NULL ||
			!fc_equal_means_identical(exprType((Node *) tle->expr), collations[i]))
			return false;
	}
	return true;
}

/*
 * DISTINCT ON keeps one row per group, with whatever its other columns
 * hold: only a Unique comparing every column it returns is safe.
 */
static bool
fc_unique_on_all_columns(Unique *unique)
{
	ListCell   *lc;

	foreach(lc, unique->plan.targetlist)
	{
		TargetEntry *tle = (TargetEntry *) lfirst(lc);
		bool		compared = false;

		for (int i = 0; i < unique->numCols && !compared; i++)
			compared = unique->uniqColIdx[i] == tle->resno;
		if (!tle->resjunk && !compared)
			return false;
	}
	return true;
}

static bool
fc_plans_walk(FcPlanCheck *check, List *plans)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (fc_plan_walk(check, (Plan *) lfirst(lc)))
			return true;
	return false;
}

/* Returns true (with check->reason) at the first thing replay cannot repeat. */
static bool
fc_plan_walk(FcPlanCheck *check, Plan *plan)
{
	if (plan == NULL)
		return false;
	if (fc_exprs_bad(check, plan->targetlist) || fc_quals_bad(check, plan->qual) ||
		fc_exprs_bad(check, plan->initPlan))
		return true;

	switch (nodeTag(plan))
	{
		case T_Result:
			if (fc_exprs_bad(check, (List *) ((Result *) plan)->resconstantqual))
				return true;
			break;
		case T_ModifyTable:
			{
				ModifyTable *mt = (ModifyTable *) plan;

				if (fc_exprs_bad(check, mt->returningLists) ||
					fc_exprs_bad(check, mt->onConflictSet) ||
					fc_quals_bad(check, (List *) mt->onConflictWhere) ||
					fc_exprs_bad(check, mt->withCheckOptionLists) ||
					fc_exprs_bad(check, mt->mergeActionLists))
					return true;
				/* UPDATE ... FROM, and DELETE ... USING ... RETURNING */
				if ((mt->operation == CMD_UPDATE ||
					 (mt->operation == CMD_DELETE && mt->returningLists != NIL)) &&
					!fc_update_joins_once(check->pstmt, plan->lefttree,
										  mt->resultRelations))
					goto unsupported;
				/* of several rows with one key, the first one in wins */
				if (mt->onConflictAction == ONCONFLICT_NOTHING &&
					!fc_plan_one_row(check->pstmt, plan->lefttree))
					goto unsupported;
				if (mt->operation != CMD_DELETE)
				{
					ListCell   *lc;

					foreach(lc, mt->resultRelations)
					{
						RangeTblEntry *rte = rt_fetch(lfirst_int(lc), check->pstmt->rtable);

						if (fc_stored_checks_bad(check, rte->relid))
							goto unsupported;
					}
				}
				break;
			}
		case T_Append:
			if (((Append *) plan)->part_prune_info != NULL)
				goto unsupported;
			return fc_plans_walk(check, ((Append *) plan)->appendplans);
		case T_MergeAppend:
			if (((MergeAppend *) plan)->part_prune_info != NULL)
				goto unsupported;
			return fc_plans_walk(check, ((MergeAppend *) plan)->mergeplans);
		case T_BitmapAnd:
			return fc_plans_walk(check, ((BitmapAnd *) plan)->bitmapplans);
		case T_BitmapOr:
			return fc_plans_walk(check, ((BitmapOr *) plan)->bitmapplans);
		case T_SeqScan:
		case T_CteScan:
		case T_WorkTableScan:
		case T_NamedTuplestoreScan:
			break;
		case T_IndexScan:
			{
				IndexScan  *is = (IndexScan *) plan;

				if (fc_quals_bad(check, is->indexqualorig) ||
					fc_exprs_bad(check, is->indexorderbyorig))
					return true;
				fc_index_scan_read(check, is->scan.scanrelid, is->indexid, is->indexqual);
				break;
			}
		case T_IndexOnlyScan:
			{
				IndexOnlyScan *is = (IndexOnlyScan *) plan;

				if (fc_quals_bad(check, is->indexqual) ||
					fc_exprs_bad(check, is->indexorderby) ||
					fc_quals_bad(check, is->recheckqual))
					return true;
				fc_index_scan_read(check, is->scan.scanrelid, is->indexid, is->indexqual);
				break;
			}
		case T_BitmapIndexScan:
			if (fc_quals_bad(check, ((BitmapIndexScan *) plan)->indexqualorig))
				return true;
			break;
		case T_BitmapHeapScan:
			if (fc_quals_bad(check, ((BitmapHeapScan *) plan)->bitmapqualorig))
				return true;
			break;
		case T_TidScan:
			if (fc_quals_bad(check, ((TidScan *) plan)->tidquals))
				return true;
			break;
		case T_TidRangeScan:
			if (fc_quals_bad(check, ((TidRangeScan *) plan)->tidrangequals))
				return true;
			break;
		case T_SubqueryScan:
			return fc_plan_walk(check, ((SubqueryScan *) plan)->subplan);
		case T_FunctionScan:
			if (fc_exprs_bad(check, ((FunctionScan *) plan)->functions))
				return true;
			break;
		case T_ValuesScan:
			if (fc_exprs_bad(check, ((ValuesScan *) plan)->values_lists))
				return true;
			break;
		case T_NestLoop:
			if (fc_quals_bad(check, ((Join *) plan)->joinqual))
				return true;
			break;
		case T_MergeJoin:
			if (fc_quals_bad(check, ((Join *) plan)->joinqual) ||
				fc_quals_bad(check, ((MergeJoin *) plan)->mergeclauses))
				return true;
			break;
		case T_HashJoin:
			if (fc_quals_bad(check, ((Join *) plan)->joinqual) ||
				fc_quals_bad(check, ((HashJoin *) plan)->hashclauses))
				return true;
			break;
		case T_Hash:
			if (fc_quals_bad(check, ((Hash *) plan)->hashkeys))
				return true;
			break;
		case T_Memoize:
			{
				Memoize    *memo = (Memoize *) plan;
				int			i = 0;
				ListCell   *lc;

				if (fc_exprs_bad(check, memo->param_exprs))
					return true;
				/* a key equal to a cached one, but looking different, gets its rows */
				foreach(lc, memo->param_exprs)
					if (!memo->binary_mode &&
						!fc_equal_means_identical(exprType(lfirst(lc)), memo->collations[i++]))
						goto unsupported;
				break;
			}
		case T_Limit:
			/* which rows it keeps depends on the plan's order (ties) */
			if (!fc_limit_first_value((Limit *) plan))
				goto unsupported;
			break;
		case T_WindowAgg:
			/* window functions over rows that tie in the window's order */
			goto unsupported;
		case T_Agg:
			{
				ListCell   *lc;

				if (!fc_group_values_identical(plan->lefttree, ((Agg *) plan)->numCols,
											   ((Agg *) plan)->grpColIdx,
											   ((Agg *) plan)->grpCollations))
					goto unsupported;
				/* the other grouping sets, over the same input */
				foreach(lc, ((Agg *) plan)->chain)
				{
					Agg		   *set = (Agg *) lfirst(lc);

					if (!fc_group_values_identical(plan->lefttree, set->numCols,
												   set->grpColIdx, set->grpCollations))
						goto unsupported;
				}
				break;
			}
		case T_Group:
			if (!fc_group_values_identical(plan->lefttree, ((Group *) plan)->numCols,
										   ((Group *) plan)->grpColIdx,
										   ((Group *) plan)->grpCollations))
				goto unsupported;
			break;
		case T_Unique:
			if (!fc_unique_on_all_columns((Unique *) plan) ||
				!fc_group_values_identical(plan->lefttree, ((Unique *) plan)->numCols,
										   ((Unique *) plan)->uniqColIdx,
										   ((Unique *) plan)->uniqCollations))
				goto unsupported;
			break;
		case T_SetOp:
			if (!fc_group_values_identical(plan->lefttree, ((SetOp *) plan)->numCols,
										   ((SetOp *) plan)->dupColIdx,
										   ((SetOp *) plan)->dupCollations))
				goto unsupported;
			break;
		case T_RecursiveUnion:
			if (!fc_group_values_identical(plan->lefttree, ((RecursiveUnion *) plan)->numCols,
										   ((RecursiveUnion *) plan)->dupColIdx,
										   ((RecursiveUnion *) plan)->dupCollations))
				goto unsupported;
			break;
		case T_Material:
		case T_Sort:
		case T_IncrementalSort:
		case T_LockRows:
		case T_ProjectSet:
			break;
		default:
			goto unsupported;	/* Gather, foreign and custom scans, ... */
	}
	return fc_plan_walk(check, plan->lefttree) ||
		fc_plan_walk(check, plan->righttree);

unsupported:
	check->reason = FC_FALLBACK_NONDETERMINISTIC;
	return true;
}

/*
 * Does a scan's filter pin every key column of one of its table's unique
 * B-tree indexes to a value (column = constant or parameter)?  A small
 * table is looked up by key with a sequential scan too.
 */
static bool
fc_filter_pins_unique_key(PlannedStmt *pstmt, Index scanrelid, List *quals)
{
	RangeTblEntry *rte = rt_fetch(scanrelid, pstmt->rtable);
	Relation	rel = relation_open(rte->relid, NoLock);	/* the plan locked it */
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		pinned = false;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		/* a partial index is unique only over the rows it covers */
		pinned = fc_index_is_unique_key(index) && index->rd_indpred == NIL &&
			fc_quals_pin_key(quals, index, scanrelid);
		index_close(index, NoLock);
		if (pinned)
			break;
	}
	list_free(indexes);
	relation_close(rel, NoLock);
	return pinned;
}

/*
 * Can the plan (or a node of it: the inner side of a join) return at most
 * one row, whatever plan replay makes?  A statement whose first row alone
 * is taken (SELECT ... INTO without STRICT, FETCH) reads a row that
 * depends on the plan's order unless it is the only one: a computed row,
 * an aggregate without groups, a point lookup by a whole unique key.
 */
static bool
fc_plan_one_row(PlannedStmt *pstmt, Plan *plan)
{
	/* FOR UPDATE locks the rows the plan below it returns */
	if (plan != NULL && IsA(plan, LockRows))
		plan = plan->lefttree;
	if (plan == NULL)
		return false;
	switch (nodeTag(plan))
	{
		case T_Result:
			return plan->lefttree == NULL;
		case T_ModifyTable:
			return fc_plan_one_row(pstmt, plan->lefttree);
		case T_Agg:
			return ((Agg *) plan)->aggstrategy == AGG_PLAIN;
		case T_Limit:
			{
				Limit	   *limit = (Limit *) plan;
				Const	   *count = (Const *) limit->limitCount;

				return limit->limitOption == LIMIT_OPTION_COUNT && count != NULL &&
					IsA(count, Const) && count->consttype == INT8OID &&
					!count->constisnull && DatumGetInt64(count->constvalue) <= 1;
			}
		case T_IndexScan:
			return fc_unique_point_lookup(((IndexScan *) plan)->indexid,
										  ((IndexScan *) plan)->indexqual);
		case T_IndexOnlyScan:
			return fc_unique_point_lookup(((IndexOnlyScan *) plan)->indexid,
										  ((IndexOnlyScan *) plan)->indexqual);
		case T_SeqScan:
			return fc_filter_pins_unique_key(pstmt, ((Scan *) plan)->scanrelid, plan->qual);
		default:
			return false;
	}
}

/*
 * Is a query executed inside a call one replay can repeat?  Its relations
 * must all be lasting fastckpt tables (views and partitioned parents only
 * name them), and its plan must pass fc_plan_walk.
 */
static FcFallback
fc_plan_check(FcPlanCheck *check)
{
	PlannedStmt *pstmt = check->pstmt;
	ListCell   *lc;

	foreach(lc, pstmt->rtable)
	{
		RangeTblEntry *rte = (RangeTblEntry *) lfirst(lc);
		Relation	rel;
		bool		ours;

		if (rte->rtekind != RTE_RELATION)
			continue;

		/*
		 * Views and partitioned parents only name tables.  A temporary
		 * one may shadow a lasting table of the same name, which replay,
		 * with no temporary schema, would read instead.
		 */
		if (rte->relkind == RELKIND_VIEW ||
			rte->relkind == RELKIND_PARTITIONED_TABLE)
		{
			if (get_rel_persistence(rte->relid) == RELPERSISTENCE_TEMP)
				return FC_FALLBACK_NON_FASTCKPT_RELATION;
			continue;
		}
		/* INSERT ... ON CONFLICT DO UPDATE's EXCLUDED: the target's row type */
		if (rte->relkind == RELKIND_COMPOSITE_TYPE && pstmt->commandType == CMD_INSERT &&
			fc_relid_is_fastckpt(rte->relid))
			continue;
		if (rte->relkind != RELKIND_RELATION)
			return FC_FALLBACK_NON_FASTCKPT_RELATION;

		/*
		 * The plan's relations are locked already (by the parser, or when
		 * the cached plan was taken): a relcache look-up is enough.
		 */
		rel = RelationIdGetRelation(rte->relid);
		if (!RelationIsValid(rel))
			return FC_FALLBACK_NON_FASTCKPT_RELATION;
		/* a temporary table is gone by the time replay would read it */
		ours = rel->rd_tableam == fc_table_am_routine() &&
			rel->rd_rel->relpersistence != RELPERSISTENCE_TEMP;
		RelationClose(rel);
		if (!ours)
			return FC_FALLBACK_NON_FASTCKPT_RELATION;
	}

	foreach(lc, pstmt->rowMarks)
	{
		/* which rows are skipped depends on other sessions' locks */
		if (((PlanRowMark *) lfirst(lc))->waitPolicy == LockWaitSkip)
			return FC_FALLBACK_NONDETERMINISTIC;
	}
	if (pstmt->parallelModeNeeded ||
		fc_plan_walk(check, pstmt->planTree) ||
		fc_plans_walk(check, pstmt->subplans))
		return check->reason != FC_FALLBACK_NONE ? check->reason : FC_FALLBACK_NONDETERMINISTIC;
	/* fastckpt_random() or a registered routine, in the plan's row order */
	if (check->order_dependent && !fc_plan_one_row(pstmt, pstmt->planTree))
		return FC_FALLBACK_NONDETERMINISTIC;
	return FC_FALLBACK_NONE;
}

/*
 * Verdicts are cached per plan.  A PL/pgSQL routine runs its queries from
 * plans cached for the session, and walking each again on every call cost
 * a few percent of a short call.  Nothing a verdict rests on can change
 * under a plan that stays in use: a changed table, index or user function
 * invalidates the plan, and a replanned query is a new PlannedStmt.  So an
 * entry lives as long as the memory holding its plan (a reset callback on
 * that context drops it, before the address can be reused), and all go
 * stale when this backend reads the registry again.
 */
typedef struct FcPlanVerdict
{
	const PlannedStmt *pstmt;	/* hash key */
	const Plan *plan_tree;		/* with rtable, the plan it was made for */
	const List *rtable;
	uint64		registry_version;
	FcFallback	reason;
	int			ntable_reads;
	Oid		   *table_reads;	/* in the plan's context, like the callback */
	int8		single_row;		/* fc_plan_single_row's, once asked; else -1 */
	bool		order_dependent;	/* FcPlanCheck's */
} FcPlanVerdict;

/* of the plan fc_plan_replayable last judged, for fc_plan_epq_exact */
static bool fc_last_order_dependent = false;

static HTAB *fc_plan_verdicts = NULL;

static void
fc_plan_verdict_forget(void *arg)
{
	const PlannedStmt *pstmt = arg;

	(void) hash_search(fc_plan_verdicts, &pstmt, HASH_REMOVE, NULL);
}

static void
fc_plan_verdict_remember(FcPlanCheck *check, FcFallback reason, uint64 registry_version)
{
	PlannedStmt *pstmt = check->pstmt;
	MemoryContext plan_cxt = GetMemoryChunkContext(pstmt);
	MemoryContextCallback *cb = NULL;
	FcPlanVerdict *v;
	Oid		   *reads = NULL;
	int			nreads = list_length(check->table_reads);
	int			i = 0;
	ListCell   *lc;

	/* only where a callback can be allocated next to the plan */
	if (!IsA(plan_cxt, AllocSetContext))
		return;
	if (fc_plan_verdicts == NULL)
	{
		HASHCTL		info;

		info.keysize = sizeof(PlannedStmt *);
		info.entrysize = sizeof(FcPlanVerdict);
		info.hcxt = TopMemoryContext;
		fc_plan_verdicts = hash_create("pg_fastckpt plan verdicts", 256, &info,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	/* allocate first: an error must not leave an entry half made */
	v = hash_search(fc_plan_verdicts, &pstmt, HASH_FIND, NULL);
	if (v == NULL)
		cb = MemoryContextAlloc(plan_cxt, sizeof(MemoryContextCallback));
	if (nreads > 0)
		reads = MemoryContextAlloc(plan_cxt, nreads * sizeof(Oid));
	foreach(lc, check->table_reads)
		reads[i++] = lfirst_oid(lc);
	if (v == NULL)
	{
		v = hash_search(fc_plan_verdicts, &pstmt, HASH_ENTER, NULL);
		cb->func = fc_plan_verdict_forget;
		cb->arg = pstmt;
		MemoryContextRegisterResetCallback(plan_cxt, cb);
	}
	v->plan_tree = pstmt->planTree;
	v->rtable = pstmt->rtable;
	v->registry_version = registry_version;
	v->reason = reason;
	v->ntable_reads = nreads;
	v->table_reads = reads;
	v->single_row = -1;
	v->order_dependent = check->order_dependent;
}

/* The verdict entry made for this very plan, if any. */
static FcPlanVerdict *
fc_plan_verdict_find(PlannedStmt *pstmt)
{
	FcPlanVerdict *v;

	if (fc_plan_verdicts == NULL)
		return NULL;
	v = hash_search(fc_plan_verdicts, &pstmt, HASH_FIND, NULL);
	if (v != NULL && v->plan_tree == pstmt->planTree && v->rtable == pstmt->rtable)
		return v;
	return NULL;
}

/*
 * fc_plan_one_row for a whole statement, kept with the plan's verdict: a
 * PL/pgSQL SELECT ... INTO asks on every call, and the answer opens
 * indexes.
 */
bool
fc_plan_single_row(PlannedStmt *pstmt)
{
	FcPlanVerdict *v = fc_plan_verdict_find(pstmt);
	bool		result;

	if (v != NULL && v->single_row >= 0)
		return v->single_row != 0;
	result = fc_plan_one_row(pstmt, pstmt->planTree);
	if (v != NULL)
		v->single_row = result ? 1 : 0;
	return result;
}

/*
 * Is re-checking this statement on a row's newer version (EvalPlanQual,
 * after waiting for its updater) the same as running it afresh, as call
 * replay does?  Only when the row is all it reads at that level: a join's
 * other rows are taken as the scan first read them (the planner marks
 * those relations REFERENCE or COPY), and with two locked relations the
 * pair the recheck keeps need not be the pair a fresh run finds.
 */
bool
fc_plan_epq_exact(PlannedStmt *pstmt)
{
	ListCell   *lc;
	Index		locked = 0;

	/*
	 * A recheck evaluates the statement's expressions again for the new
	 * version: fastckpt_random() draws again, a volatile registered routine
	 * runs (and writes) again, where replay, which does not wait, runs them
	 * once.  Asked right after fc_plan_replayable judged this plan.
	 */
	if (fc_last_order_dependent)
		return false;

	foreach(lc, pstmt->rowMarks)
	{
		PlanRowMark *rc = lfirst_node(PlanRowMark, lc);

		if (!RowMarkRequiresRowShareLock(rc->markType))
			return false;
		/* an inheritance parent's children share its rowmarkId */
		if (locked != 0 && rc->rowmarkId != locked)
			return false;
		locked = rc->rowmarkId;
	}
	return true;
}

/* A whole-table read of a replayable query goes into the call's read set. */
static void
fc_plan_note_read(Oid relid)
{
	Relation	rel;

	if (!fc_read_set_active)
		return;
	rel = relation_open(relid, AccessShareLock);
	if (rel->rd_tableam == fc_table_am_routine())
		fc_read_note_table(fc_table_for_rel(rel));
	relation_close(rel, NoLock);
}

FcFallback
fc_plan_replayable(PlannedStmt *pstmt)
{
	uint64		registry_version = fc_registry_version();
	FcPlanVerdict *v;
	FcPlanCheck check;
	FcFallback	reason;

	v = fc_plan_verdict_find(pstmt);
	if (v != NULL && v->registry_version == registry_version)
	{
		fc_last_order_dependent = v->order_dependent;
		if (v->reason == FC_FALLBACK_NONE)
			for (int i = 0; i < v->ntable_reads; i++)
				fc_plan_note_read(v->table_reads[i]);
		return v->reason;
	}

	check.pstmt = pstmt;
	check.order_dependent = false;
	check.reason = FC_FALLBACK_NONE;
	check.table_reads = NIL;
	reason = fc_plan_check(&check);
	fc_last_order_dependent = check.order_dependent;
	fc_plan_verdict_remember(&check, reason, registry_version);
	if (reason == FC_FALLBACK_NONE)
	{
		ListCell   *lc;

		foreach(lc, check.table_reads)
			fc_plan_note_read(lfirst_oid(lc));
	}
	list_free(check.table_reads);
	return reason;
}

/* ---- PL/pgSQL simple expressions ---- */

/*
 * Set while the statements of a PL/pgSQL function that planning runs to
 * fold a call into its result are checked: what would taint a call then
 * means a plan may keep a value replay would compute anew.
 */
static bool fc_pl_folding = false;

static void
fc_pl_taint(FcFallback reason)
{
	if (fc_pl_folding)
		fc_folding_mark();
	else
		fc_call_taint(reason);
}

/* Has fc_pl_taint() nothing left to decide? */
static bool
fc_pl_decided(void)
{
	return fc_pl_folding ? fc_plans_hold_folded_values() : fc_call_tainted();
}

static void
fc_check_plexpr(PLpgSQL_expr *expr)
{
	if (expr != NULL && expr->expr_simple_expr != NULL &&
		fc_expr_walker((Node *) expr->expr_simple_expr, NULL))
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
}

static void
fc_check_plexpr_list(List *exprs)
{
	ListCell   *lc;

	foreach(lc, exprs)
		fc_check_plexpr((PLpgSQL_expr *) lfirst(lc));
}

/*
 * Storing into a PL/pgSQL variable of a domain type, or of a composite or
 * array type with one inside, runs the domain's checks: where they are not
 * replayable, neither is the call.
 */
static bool
fc_type_checks_bad(Oid typid)
{
	Oid			elem = get_element_type(typid);
	Oid			base;
	TupleDesc	desc;
	bool		bad = false;

	if (OidIsValid(elem))
		return fc_type_checks_bad(elem);
	if (fc_domain_checks_bad(typid, NULL))
		return true;
	/* a domain over an array or a composite: its elements' or fields' too */
	base = getBaseType(typid);
	if (base != typid)
		return fc_type_checks_bad(base);
	if (get_typtype(typid) != TYPTYPE_COMPOSITE)
		return false;
	desc = lookup_rowtype_tupdesc(typid, -1);
	for (int i = 0; !bad && i < desc->natts; i++)
		bad = !TupleDescAttr(desc, i)->attisdropped &&
			fc_type_checks_bad(TupleDescAttr(desc, i)->atttypid);
	ReleaseTupleDesc(desc);
	return bad;
}

/*
 * timetz (an array or domain of it): a conversion into it from anything but
 * timetz or timestamptz (text without an offset, time) takes the zone's
 * offset on the current date, which replay does not share.
 */
static bool
fc_cast_to_timetz_reads_date(Oid src, Oid dst)
{
	Oid			elem;

	if (!OidIsValid(src) || !fc_type_is_timetz(dst) || fc_type_is_timetz(src))
		return false;
	elem = get_element_type(src);
	if (OidIsValid(elem))
		src = elem;
	return getBaseType(src) != TIMESTAMPTZOID;
}

/*
 * Storing a simple expression's text into a variable of a date or time
 * type runs the type's input function, which reads the clock for 'now',
 * 'today' ...: fine for a constant that names none.
 */
static TupleDesc fc_plexpr_result(PLpgSQL_expr *expr);

static void
fc_check_plcast(PLpgSQL_expr *expr, PLpgSQL_datum *target)
{
	Oid			typid;
	Const	   *c;

	if (expr != NULL && target->dtype == PLPGSQL_DTYPE_REC)
	{
		/*
		 * A row of another type is converted field by field, through the
		 * fields' text where their types differ (a text 'now' into a
		 * timestamptz field).
		 */
		TupleDesc	result = fc_plexpr_result(expr);
		Oid			src = expr->expr_simple_expr != NULL ? expr->expr_simple_type :
			(result != NULL && result->natts > 0 ? TupleDescAttr(result, 0)->atttypid :
			 InvalidOid);

		/* (not prepared yet as the statement starts: checked as it ends) */
		typid = ((PLpgSQL_rec *) target)->rectypeid;
		if (OidIsValid(src) && src != typid && fc_type_input_reads_clock(typid))
			fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
		return;
	}
	if (expr == NULL || expr->expr_simple_expr == NULL ||
		target->dtype != PLPGSQL_DTYPE_VAR)
		return;
	typid = ((PLpgSQL_var *) target)->datatype->typoid;
	if (expr->expr_simple_type == typid || !fc_type_input_reads_clock(typid))
		return;
	if (fc_cast_to_timetz_reads_date(expr->expr_simple_type, typid))
	{
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
		return;
	}
	/* a date or time value converts by a cast; anything else may go by its text */
	if (fc_type_input_reads_clock(expr->expr_simple_type))
		return;
	c = (Const *) expr->expr_simple_expr;
	if (IsA(c, Const) && (c->constisnull ||
						  (c->consttype == TEXTOID &&
						   !fc_text_names_clock(VARDATA_ANY(c->constvalue),
												VARSIZE_ANY_EXHDR(c->constvalue)))))
		return;
	fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
}

/* A variable's declared default, evaluated as its block starts. */
static void
fc_check_pldefault(PLpgSQL_datum *datum)
{
	if (datum->dtype == PLPGSQL_DTYPE_VAR)
	{
		fc_check_plexpr(((PLpgSQL_var *) datum)->default_val);
		fc_check_plcast(((PLpgSQL_var *) datum)->default_val, datum);
	}
	else if (datum->dtype == PLPGSQL_DTYPE_REC)
	{
		fc_check_plexpr(((PLpgSQL_rec *) datum)->default_val);
		fc_check_plcast(((PLpgSQL_rec *) datum)->default_val, datum);
	}
}

/*
 * As a routine starts: what storing into its variables (parameters, OUT
 * parameters, those of inner blocks) checks, and what returning its result
 * does, which PL/pgSQL casts to the result type.
 */
static void
fc_check_pltypes(PLpgSQL_execstate *estate)
{
	Oid			rettype = estate->func->fn_rettype;

	for (int i = 0; i < estate->ndatums && !fc_pl_decided(); i++)
	{
		PLpgSQL_datum *datum = estate->datums[i];
		Oid			typid = InvalidOid;

		if (datum->dtype == PLPGSQL_DTYPE_VAR)
		{
			PLpgSQL_type *type = ((PLpgSQL_var *) datum)->datatype;

			if (type->typtype != TYPTYPE_BASE || type->typisarray)
				typid = type->typoid;
		}
		else if (datum->dtype == PLPGSQL_DTYPE_REC &&
				 ((PLpgSQL_rec *) datum)->rectypeid != RECORDOID)
			typid = ((PLpgSQL_rec *) datum)->rectypeid;
		if (OidIsValid(typid) && (fc_type_is_temporary(typid) || fc_type_checks_bad(typid)))
			fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
	}
	if (rettype != VOIDOID && rettype != RECORDOID && fc_type_checks_bad(rettype))
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
}

/*
 * Cursors the call opened itself.  One opened before it (DECLARE by the
 * client, a refcursor handed in) was planned, and maybe read from, outside
 * the call, and does not exist at replay.
 */
typedef struct FcPortalName
{
	char		name[NAMEDATALEN];	/* as the portal manager keys portals */
} FcPortalName;

static HTAB *fc_call_portals = NULL;	/* made at the call's first OPEN */

void
fc_plpgsql_call_begin(void)
{
	if (fc_call_portals != NULL)
	{
		hash_destroy(fc_call_portals);
		fc_call_portals = NULL;
	}
}

static void
fc_note_call_portal(const char *name)
{
	if (fc_call_portals == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = NAMEDATALEN;
		ctl.entrysize = sizeof(FcPortalName);
		fc_call_portals = hash_create("pg_fastckpt call cursors", 16, &ctl,
									  HASH_ELEM | HASH_STRINGS);
	}
	(void) hash_search(fc_call_portals, name, HASH_ENTER, NULL);
}

/* The portal name a cursor variable holds, or NULL. */
static char *
fc_plcursor_name(PLpgSQL_execstate *estate, int curvar)
{
	PLpgSQL_var *var = (PLpgSQL_var *) estate->datums[curvar];

	return var->isnull ? NULL : TextDatumGetCString(var->value);
}

static void
fc_check_plcursor(PLpgSQL_execstate *estate, int curvar)
{
	char	   *name = fc_plcursor_name(estate, curvar);

	if (name == NULL)
		return;					/* PL/pgSQL says it is null */
	if (fc_call_portals == NULL ||
		hash_search(fc_call_portals, name, HASH_FIND, NULL) == NULL)
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
	pfree(name);
}

/*
 * Storing a string into a variable of a date or time type runs the type's
 * input function, which reads the clock for 'now', 'today' ...: PL/pgSQL
 * casts what a query returns INTO a variable (or a FOR loop's, a FETCH's)
 * and what a routine RETURNs to its result type at run time, in no plan.
 */
static bool
fc_store_reads_clock(Oid src, Oid dst)
{
	if (!OidIsValid(src) || !OidIsValid(dst) || src == dst ||
		!fc_type_input_reads_clock(dst))
		return false;
	if (fc_cast_to_timetz_reads_date(src, dst))
		return true;
	/*
	 * A row (or an array of rows) of another type is converted field by
	 * field, through a field's text where the types differ: that the source
	 * has a date or time field too says nothing of the other fields.
	 */
	if (type_is_rowtype(getBaseType(OidIsValid(get_element_type(dst)) ?
									get_element_type(dst) : dst)))
		return true;
	/*
	 * PL/pgSQL converts through text where the parser knows no assignment
	 * cast (an enum, xml, an array of text ...): only a date or time type
	 * (or an array or range of one) converts by a cast of its own.
	 */
	return !fc_type_input_reads_clock(src);
}

/* The type a target field (a variable of a row target) stores as. */
static Oid
fc_datum_type(PLpgSQL_datum *datum)
{
	if (datum->dtype == PLPGSQL_DTYPE_VAR)
		return ((PLpgSQL_var *) datum)->datatype->typoid;
	if (datum->dtype == PLPGSQL_DTYPE_REC)
		return ((PLpgSQL_rec *) datum)->rectypeid;
	return InvalidOid;
}

static void
fc_check_plinto(PLpgSQL_execstate *estate, PLpgSQL_variable *target, TupleDesc src)
{
	if (target == NULL || src == NULL)
		return;
	if (target->dtype == PLPGSQL_DTYPE_ROW)
	{
		PLpgSQL_row *row = (PLpgSQL_row *) target;

		for (int i = 0; i < row->nfields && i < src->natts; i++)
			if (fc_store_reads_clock(TupleDescAttr(src, i)->atttypid,
									 fc_datum_type(estate->datums[row->varnos[i]])))
				fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
	}
	else if (target->dtype == PLPGSQL_DTYPE_REC &&
			 ((PLpgSQL_rec *) target)->rectypeid != RECORDOID)
	{
		TupleDesc	dst = lookup_rowtype_tupdesc(((PLpgSQL_rec *) target)->rectypeid, -1);

		for (int i = 0; i < dst->natts && i < src->natts; i++)
			if (fc_store_reads_clock(TupleDescAttr(src, i)->atttypid,
									 TupleDescAttr(dst, i)->atttypid))
				fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
		ReleaseTupleDesc(dst);
	}
	else if (target->dtype == PLPGSQL_DTYPE_VAR && src->natts > 0 &&
			 fc_store_reads_clock(TupleDescAttr(src, 0)->atttypid,
								  fc_datum_type((PLpgSQL_datum *) target)))
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
}

/*
 * A dynamic query's result types are not known before it runs: a target
 * of a date or time type may be given text.
 */
static void
fc_check_plinto_dynamic(PLpgSQL_execstate *estate, PLpgSQL_variable *target)
{
	Oid			typid = InvalidOid;

	if (target == NULL)
		return;
	if (target->dtype == PLPGSQL_DTYPE_ROW)
	{
		PLpgSQL_row *row = (PLpgSQL_row *) target;

		for (int i = 0; i < row->nfields; i++)
			if (fc_type_input_reads_clock(fc_datum_type(estate->datums[row->varnos[i]])))
				fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
		return;
	}
	if (target->dtype == PLPGSQL_DTYPE_REC)
		typid = ((PLpgSQL_rec *) target)->rectypeid;
	else if (target->dtype == PLPGSQL_DTYPE_VAR)
		typid = fc_datum_type((PLpgSQL_datum *) target);
	if (OidIsValid(typid) && typid != RECORDOID && fc_type_input_reads_clock(typid))
		fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
}

/* What a prepared PL/pgSQL query returns (NULL before it was prepared). */
static TupleDesc
fc_plexpr_result(PLpgSQL_expr *expr)
{
	List	   *sources;

	if (expr == NULL || expr->plan == NULL)
		return NULL;
	sources = SPI_plan_get_plan_sources(expr->plan);
	if (sources == NIL)
		return NULL;
	return ((CachedPlanSource *) llast(sources))->resultDesc;
}

/*
 * Check a statement's expressions, before it runs and once it ran; what it
 * stores INTO variables and RETURNs is compared with what its query gave
 * once it ran (ran), when the plan and the returned value exist.
 */
static void
fc_check_plstmt(PLpgSQL_execstate *estate, PLpgSQL_stmt *stmt, bool ran)
{
	ListCell   *lc;

	if (!fc_pl_folding && !fc_call_active)
		return;
	if (fc_pl_decided())
		return;
	switch (stmt->cmd_type)
	{
		case PLPGSQL_STMT_BLOCK:
			{
				PLpgSQL_stmt_block *block = (PLpgSQL_stmt_block *) stmt;

				/* DECLARE x := ... is evaluated as the block starts */
				for (int i = 0; i < block->n_initvars; i++)
					fc_check_pldefault(estate->datums[block->initvarnos[i]]);
				break;
			}
		case PLPGSQL_STMT_ASSIGN:
			fc_check_plexpr(((PLpgSQL_stmt_assign *) stmt)->expr);
			fc_check_plcast(((PLpgSQL_stmt_assign *) stmt)->expr,
							estate->datums[((PLpgSQL_stmt_assign *) stmt)->varno]);
			break;
		case PLPGSQL_STMT_IF:
			fc_check_plexpr(((PLpgSQL_stmt_if *) stmt)->cond);
			foreach(lc, ((PLpgSQL_stmt_if *) stmt)->elsif_list)
				fc_check_plexpr(((PLpgSQL_if_elsif *) lfirst(lc))->cond);
			break;
		case PLPGSQL_STMT_CASE:
			fc_check_plexpr(((PLpgSQL_stmt_case *) stmt)->t_expr);
			foreach(lc, ((PLpgSQL_stmt_case *) stmt)->case_when_list)
				fc_check_plexpr(((PLpgSQL_case_when *) lfirst(lc))->expr);
			break;
		case PLPGSQL_STMT_WHILE:
			fc_check_plexpr(((PLpgSQL_stmt_while *) stmt)->cond);
			break;
		case PLPGSQL_STMT_FORI:
			fc_check_plexpr(((PLpgSQL_stmt_fori *) stmt)->lower);
			fc_check_plexpr(((PLpgSQL_stmt_fori *) stmt)->upper);
			fc_check_plexpr(((PLpgSQL_stmt_fori *) stmt)->step);
			break;
		case PLPGSQL_STMT_FOREACH_A:
			{
				PLpgSQL_stmt_foreach_a *fe = (PLpgSQL_stmt_foreach_a *) stmt;
				TupleDesc	arr = fc_plexpr_result(fe->expr);
				Oid			arrtype = (arr != NULL && arr->natts > 0) ?
					TupleDescAttr(arr, 0)->atttypid : InvalidOid;
				Oid			src = InvalidOid;
				PLpgSQL_datum *var = estate->datums[fe->varno];

				if (OidIsValid(arrtype))
					src = fe->slice > 0 ? arrtype : get_element_type(getBaseType(arrtype));

				fc_check_plexpr(fe->expr);
				if (ran && OidIsValid(src))
				{
					if (var->dtype == PLPGSQL_DTYPE_ROW)
					{
						PLpgSQL_row *row = (PLpgSQL_row *) var;

						for (int i = 0; i < row->nfields; i++)
							if (fc_type_input_reads_clock(fc_datum_type(estate->datums[row->varnos[i]])))
								fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
					}
					else if (fc_store_reads_clock(src, fc_datum_type(var)))
						fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
				}
				break;
			}
		case PLPGSQL_STMT_EXIT:
			fc_check_plexpr(((PLpgSQL_stmt_exit *) stmt)->cond);
			break;
		case PLPGSQL_STMT_RETURN:
			fc_check_plexpr(((PLpgSQL_stmt_return *) stmt)->expr);
			/* the value's type, cast to the result type after */
			if (ran && !estate->retisnull &&
				fc_store_reads_clock(estate->rettype, estate->func->fn_rettype))
				fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
			break;
		case PLPGSQL_STMT_EXECSQL:
			if (ran && ((PLpgSQL_stmt_execsql *) stmt)->into)
				fc_check_plinto(estate, ((PLpgSQL_stmt_execsql *) stmt)->target,
								fc_plexpr_result(((PLpgSQL_stmt_execsql *) stmt)->sqlstmt));
			break;
		case PLPGSQL_STMT_FORS:
			if (ran)
				fc_check_plinto(estate, ((PLpgSQL_stmt_fors *) stmt)->var,
							fc_plexpr_result(((PLpgSQL_stmt_fors *) stmt)->query));
			break;
		case PLPGSQL_STMT_FORC:
			{
				PLpgSQL_var *cur = (PLpgSQL_var *) estate->datums[((PLpgSQL_stmt_forc *) stmt)->curvar];

				if (ran)
					fc_check_plinto(estate, ((PLpgSQL_stmt_forc *) stmt)->var,
									fc_plexpr_result(cur->cursor_explicit_expr));
				if (ran && ((PLpgSQL_stmt_forc *) stmt)->argquery != NULL &&
					cur->cursor_explicit_argrow >= 0)
					fc_check_plinto(estate,
									(PLpgSQL_variable *) estate->datums[cur->cursor_explicit_argrow],
									fc_plexpr_result(((PLpgSQL_stmt_forc *) stmt)->argquery));
				break;
			}
		case PLPGSQL_STMT_RETURN_NEXT:
			{
				PLpgSQL_stmt_return_next *rn = (PLpgSQL_stmt_return_next *) stmt;
				TupleDesc	dst = estate->tuple_store_desc;

				fc_check_plexpr(rn->expr);
				/* a scalar is cast to the result column at run time */
				if (ran && dst != NULL && dst->natts == 1 && !estate->retistuple)
				{
					Oid			src = InvalidOid;

					if (rn->retvarno >= 0)
						src = fc_datum_type(estate->datums[rn->retvarno]);
					else if (rn->expr != NULL && rn->expr->expr_simple_expr != NULL)
						src = rn->expr->expr_simple_type;
					else if (fc_plexpr_result(rn->expr) != NULL &&
							 fc_plexpr_result(rn->expr)->natts > 0)
						src = TupleDescAttr(fc_plexpr_result(rn->expr), 0)->atttypid;
					if (fc_store_reads_clock(src, TupleDescAttr(dst, 0)->atttypid))
						fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
				}
				break;
			}
		case PLPGSQL_STMT_RETURN_QUERY:
			fc_check_plexpr(((PLpgSQL_stmt_return_query *) stmt)->dynquery);
			fc_check_plexpr_list(((PLpgSQL_stmt_return_query *) stmt)->params);
			break;
		case PLPGSQL_STMT_RAISE:
			fc_check_plexpr_list(((PLpgSQL_stmt_raise *) stmt)->params);
			foreach(lc, ((PLpgSQL_stmt_raise *) stmt)->options)
				fc_check_plexpr(((PLpgSQL_raise_option *) lfirst(lc))->expr);
			break;
		case PLPGSQL_STMT_ASSERT:
			fc_check_plexpr(((PLpgSQL_stmt_assert *) stmt)->cond);
			fc_check_plexpr(((PLpgSQL_stmt_assert *) stmt)->message);
			break;
		case PLPGSQL_STMT_DYNEXECUTE:
			{
				PLpgSQL_stmt_dynexecute *dyn = (PLpgSQL_stmt_dynexecute *) stmt;

				/* INTO without STRICT keeps the first row of however many */
				if (dyn->into && !dyn->strict)
					fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
				if (dyn->into)
					fc_check_plinto_dynamic(estate, dyn->target);
				fc_check_plexpr(dyn->query);
				fc_check_plexpr_list(dyn->params);
				break;
			}
		case PLPGSQL_STMT_DYNFORS:
			fc_check_plexpr(((PLpgSQL_stmt_dynfors *) stmt)->query);
			fc_check_plinto_dynamic(estate, ((PLpgSQL_stmt_dynfors *) stmt)->var);
			fc_check_plexpr_list(((PLpgSQL_stmt_dynfors *) stmt)->params);
			break;
		case PLPGSQL_STMT_OPEN:
			{
				PLpgSQL_stmt_open *op = (PLpgSQL_stmt_open *) stmt;
				PLpgSQL_var *cur = (PLpgSQL_var *) estate->datums[op->curvar];

				fc_check_plexpr(op->dynquery);
				fc_check_plexpr_list(op->params);
				/* the arguments of a bound cursor are stored INTO its parameters */
				if (ran && op->argquery != NULL && cur->cursor_explicit_argrow >= 0)
					fc_check_plinto(estate,
									(PLpgSQL_variable *) estate->datums[cur->cursor_explicit_argrow],
									fc_plexpr_result(op->argquery));
				break;
			}
		case PLPGSQL_STMT_FETCH:
			{
				PLpgSQL_stmt_fetch *fetch = (PLpgSQL_stmt_fetch *) stmt;
				char	   *name = fc_plcursor_name(estate, fetch->curvar);
				Portal		portal;

				fc_check_plexpr(fetch->expr);
				fc_check_plcursor(estate, fetch->curvar);
				if (ran && !fetch->is_move && name != NULL &&
					(portal = SPI_cursor_find(name)) != NULL)
					fc_check_plinto(estate, fetch->target, portal->tupDesc);
				break;
			}
		case PLPGSQL_STMT_CLOSE:
			fc_check_plcursor(estate, ((PLpgSQL_stmt_close *) stmt)->curvar);
			break;
		case PLPGSQL_STMT_GETDIAG:
			/* the call stack as text: in lc_messages, and replay's differs */
			foreach(lc, ((PLpgSQL_stmt_getdiag *) stmt)->diag_items)
				if (((PLpgSQL_diag_item *) lfirst(lc))->kind == PLPGSQL_GETDIAG_CONTEXT)
					fc_pl_taint(FC_FALLBACK_NONDETERMINISTIC);
			break;
		default:
			/* the rest run their queries through the executor */
			break;
	}
}

/*
 * A statement of a PL/pgSQL function that planning runs, to fold its call
 * into a constant (an IMMUTABLE one), or to estimate: what would make a
 * call fall back means the plan may keep a value replay computes anew.
 */
static void
fc_check_plstmt_folded(PLpgSQL_execstate *estate, PLpgSQL_stmt *stmt, bool starting)
{
	if (fc_plans_hold_folded_values())
		return;
	fc_pl_folding = true;
	PG_TRY();
	{
		if (starting && stmt == (PLpgSQL_stmt *) estate->func->action)
			fc_check_pltypes(estate);
		fc_check_plstmt(estate, stmt, !starting);
	}
	PG_FINALLY();
	{
		fc_pl_folding = false;
	}
	PG_END_TRY();
}

/* Before a statement runs; the routine's own block first starts it. */
static void
fc_check_plstmt_beg(PLpgSQL_execstate *estate, PLpgSQL_stmt *stmt)
{
	if (fc_folding_in_planner())
	{
		fc_check_plstmt_folded(estate, stmt, true);
		return;
	}
	if (fc_call_active && !fc_call_tainted() &&
		stmt == (PLpgSQL_stmt *) estate->func->action)
		fc_check_pltypes(estate);
	fc_check_plstmt(estate, stmt, false);
}

/* Once a statement ran: note the cursor an OPEN opened, then check. */
static void
fc_check_plstmt_end(PLpgSQL_execstate *estate, PLpgSQL_stmt *stmt)
{
	if (fc_folding_in_planner())
	{
		fc_check_plstmt_folded(estate, stmt, false);
		return;
	}
	if (fc_call_active && !fc_call_tainted() && stmt->cmd_type == PLPGSQL_STMT_OPEN)
	{
		char	   *name = fc_plcursor_name(estate, ((PLpgSQL_stmt_open *) stmt)->curvar);

		if (name != NULL)
		{
			fc_note_call_portal(name);
			pfree(name);
		}
	}
	fc_check_plstmt(estate, stmt, true);
}

/*
 * Install the plugin unless another one (a debugger, plpgsql_check) holds
 * the slot; then calls that run PL/pgSQL code fall back, since their
 * simple expressions cannot be checked.
 */
void
fc_install_plpgsql_plugin(void)
{
	fc_plpgsql_plugin_ptr = (PLpgSQL_plugin **) find_rendezvous_variable("PLpgSQL_plugin");
	if (*fc_plpgsql_plugin_ptr != NULL)
		return;
	memset(&fc_plpgsql_plugin, 0, sizeof(fc_plpgsql_plugin));
	fc_plpgsql_plugin.stmt_beg = fc_check_plstmt_beg;
	fc_plpgsql_plugin.stmt_end = fc_check_plstmt_end;
	*fc_plpgsql_plugin_ptr = &fc_plpgsql_plugin;
}

bool
fc_plpgsql_plugin_installed(void)
{
	return fc_plpgsql_plugin_ptr != NULL && *fc_plpgsql_plugin_ptr == &fc_plpgsql_plugin;
}
