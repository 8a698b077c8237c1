/*-------------------------------------------------------------------------
 *
 * storage_options.c
 *	  A fastckpt table's slot sizing, kept with the table.
 *
 * Slot images are sized when a table's storage is created, from its column
 * types and two settings: pg_fastckpt.default_row_size (columns without a
 * length limit) and pg_fastckpt.bytes_per_char (char(n), varchar(n)).  So
 * that every later storage of the table (TRUNCATE, VACUUM FULL, a restore
 * of a dump) is sized alike whatever the session's settings, a table keeps
 * its own as storage parameters, fastckpt_row_size and
 * fastckpt_bytes_per_char, in pg_class.reloptions: given in CREATE TABLE
 * ... WITH (...) or ALTER TABLE ... SET (...), or else taken from the
 * session when it creates the table with other values than the defaults.
 * pg_dump writes them out with the table.
 *
 * PostgreSQL's heap parameters do not include them, and CREATE TABLE and
 * ALTER TABLE ... SET would refuse them: the utility hook takes them out
 * of those statements, and out of the catalog while an ALTER TABLE sets
 * other parameters.  The relcache ignores parameters it does not know.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "access/fastckpt_am.h"
#include "pg_fastckpt.h"
#include "store/row_size.h"
#include "store/slot.h"

#define FC_OPT_ROW_SIZE			"fastckpt_row_size"
#define FC_OPT_BYTES_PER_CHAR	"fastckpt_bytes_per_char"

/* the settings' built-in defaults: a table sized with them records nothing */
#define FC_DEFAULT_ROW_SIZE		256
#define FC_DEFAULT_BYTES_PER_CHAR 0

/* Given in the CREATE statement running now, for the table it creates. */
const FcSizingOptions *fc_statement_sizing = NULL;

static bool
fc_is_sizing_option(const DefElem *def)
{
	return def->defnamespace == NULL &&
		(strcmp(def->defname, FC_OPT_ROW_SIZE) == 0 ||
		 strcmp(def->defname, FC_OPT_BYTES_PER_CHAR) == 0);
}

static int
fc_sizing_value(DefElem *def)
{
	bool		row_size = strcmp(def->defname, FC_OPT_ROW_SIZE) == 0;
	int			min = row_size ? 32 : 0;
	int			max = row_size ? FC_MAX_IMAGE_CAPACITY : 4;
	int			value;

	if (def->arg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("storage parameter \"%s\" needs a value", def->defname)));
	{
		const char *text = defGetString(def);
		char	   *end;
		long		parsed;

		errno = 0;
		parsed = strtol(text, &end, 10);
		if (errno != 0 || end == text || *end != '\0' || parsed < PG_INT32_MIN || parsed > PG_INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for storage parameter \"%s\": \"%s\"", def->defname, text),
					 errhint("Give a whole number from %d to %d.", min, max)));
		value = (int) parsed;
	}
	if (value < min || value > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d is outside the valid range for storage parameter \"%s\" (%d .. %d)",
						value, def->defname, min, max),
				 errhint("%s", row_size ?
						 "It is the row image size, in bytes, for fastckpt tables with columns of unbounded size." :
						 "It is the bytes per character assumed for char(n) and varchar(n) columns; 0 assumes the encoding's longest character.")));
	return value;
}

void
fc_sizing_options_init(FcSizingOptions *opts)
{
	opts->row_size = -1;
	opts->bytes_per_char = -1;
	opts->reset_row_size = false;
	opts->reset_bytes_per_char = false;
}

/*
 * Take fastckpt_row_size and fastckpt_bytes_per_char out of a statement's
 * parameters into opts (is_reset: ALTER TABLE ... RESET).  True if there
 * were any.
 */
bool
fc_take_sizing_options(List **options, bool is_reset, FcSizingOptions *opts)
{
	List	   *rest = NIL;
	ListCell   *lc;
	bool		found = false;

	foreach(lc, *options)
	{
		DefElem    *def = lfirst_node(DefElem, lc);
		bool		row_size;

		if (!fc_is_sizing_option(def))
		{
			rest = lappend(rest, def);
			continue;
		}
		found = true;
		row_size = strcmp(def->defname, FC_OPT_ROW_SIZE) == 0;
		if (is_reset && row_size)
			opts->reset_row_size = true;
		else if (is_reset)
			opts->reset_bytes_per_char = true;
		else if (row_size)
			opts->row_size = fc_sizing_value(def);
		else
			opts->bytes_per_char = fc_sizing_value(def);
	}
	if (found)
		*options = rest;
	return found;
}

/* The table's parameters as stored, over opts (left as they are if absent). */
static List *
fc_read_reloptions(Oid relid, FcSizingOptions *opts)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	List	   *others = NIL;
	Datum		datum;
	bool		isnull;
	ListCell   *lc;

	if (!HeapTupleIsValid(tuple))
		return NIL;				/* being created: not in the catalog yet */
	datum = SysCacheGetAttr(RELOID, tuple, Anum_pg_class_reloptions, &isnull);
	if (!isnull)
	{
		foreach(lc, untransformRelOptions(datum))
		{
			DefElem    *def = lfirst_node(DefElem, lc);

			if (!fc_is_sizing_option(def))
				others = lappend(others, def);
			else if (opts != NULL && strcmp(def->defname, FC_OPT_ROW_SIZE) == 0)
				opts->row_size = fc_sizing_value(def);
			else if (opts != NULL)
				opts->bytes_per_char = fc_sizing_value(def);
		}
	}
	ReleaseSysCache(tuple);
	return others;
}

/* Does the table keep sizing parameters?  Their values go to opts. */
bool
fc_relation_sizing_options(Oid relid, FcSizingOptions *opts)
{
	fc_sizing_options_init(opts);
	(void) fc_read_reloptions(relid, opts);
	return opts->row_size >= 0 || opts->bytes_per_char >= 0;
}

/* Store the table's parameters: the others as they are, then opts. */
static void
fc_write_reloptions(Oid relid, const FcSizingOptions *opts)
{
	List	   *defs = fc_read_reloptions(relid, NULL);
	Relation	classrel;
	HeapTuple	tuple;
	HeapTuple	newtuple;
	Datum		values[Natts_pg_class] = {0};
	bool		nulls[Natts_pg_class] = {0};
	bool		replace[Natts_pg_class] = {0};
	Datum		reloptions;

	if (opts != NULL && opts->row_size >= 0)
		defs = lappend(defs, makeDefElem(FC_OPT_ROW_SIZE,
										 (Node *) makeString(psprintf("%d", opts->row_size)), -1));
	if (opts != NULL && opts->bytes_per_char >= 0)
		defs = lappend(defs, makeDefElem(FC_OPT_BYTES_PER_CHAR,
										 (Node *) makeString(psprintf("%d", opts->bytes_per_char)), -1));
	reloptions = transformRelOptions((Datum) 0, defs, NULL, NULL, false, false);

	classrel = table_open(RelationRelationId, RowExclusiveLock);
	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	values[Anum_pg_class_reloptions - 1] = reloptions;
	nulls[Anum_pg_class_reloptions - 1] = (reloptions == (Datum) 0);
	replace[Anum_pg_class_reloptions - 1] = true;
	newtuple = heap_modify_tuple(tuple, RelationGetDescr(classrel), values, nulls, replace);
	CatalogTupleUpdate(classrel, &newtuple->t_self, newtuple);
	heap_freetuple(newtuple);
	heap_freetuple(tuple);
	table_close(classrel, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * Before an ALTER TABLE that sets or resets other parameters: take the
 * table's sizing parameters out of the catalog (PostgreSQL checks all the
 * table's parameters there); fc_sizing_options_after_alter puts them back.
 */
void
fc_hide_sizing_options(Oid relid)
{
	fc_write_reloptions(relid, NULL);
}

/*
 * After CREATE TABLE (or CREATE TABLE AS, or SET ACCESS METHOD fastckpt)
 * made relid: record the parameters the statement gave, or else the
 * session's settings where they are not the defaults.
 */
void
fc_record_sizing_options(Oid relid, const FcSizingOptions *given)
{
	FcSizingOptions opts;

	fc_sizing_options_init(&opts);
	if (given != NULL)
	{
		opts.row_size = given->row_size;
		opts.bytes_per_char = given->bytes_per_char;
	}
	if (opts.row_size < 0 && fc_default_row_size != FC_DEFAULT_ROW_SIZE)
		opts.row_size = fc_default_row_size;
	if (opts.bytes_per_char < 0 && fc_bytes_per_char != FC_DEFAULT_BYTES_PER_CHAR)
		opts.bytes_per_char = fc_bytes_per_char;
	if (opts.row_size >= 0 || opts.bytes_per_char >= 0)
		fc_write_reloptions(relid, &opts);
}

/*
 * After ALTER TABLE: the sizing parameters the table had (before), with
 * the statement's changes (change), or none if it is not a fastckpt table
 * any more.
 */
void
fc_sizing_options_after_alter(Oid relid, const FcSizingOptions *before,
							  const FcSizingOptions *change)
{
	FcSizingOptions opts = *before;

	if (!fc_relid_is_fastckpt(relid))
	{
		fc_write_reloptions(relid, NULL);
		return;
	}
	if (change->row_size >= 0)
		opts.row_size = change->row_size;
	if (change->bytes_per_char >= 0)
		opts.bytes_per_char = change->bytes_per_char;
	if (change->reset_row_size)
		opts.row_size = -1;
	if (change->reset_bytes_per_char)
		opts.bytes_per_char = -1;
	fc_write_reloptions(relid, &opts);
}

/*
 * The sizing of the table's rows: its parameters where it has them, else
 * the session's settings for a table being created (which records them
 * unless they are the defaults: fc_record_sizing_options), and the
 * defaults for a new storage of a fastckpt table that exists (TRUNCATE,
 * VACUUM FULL, CLUSTER: whatever the session that runs them has set).  A
 * rewrite's transient table is sized with those of the table it copies; a
 * table being created, with those its statement gives.
 */
static FcSizing
fc_table_sizing(Relation rel)
{
	FcSizing	sizing = {fc_default_row_size, fc_bytes_per_char};
	FcSizingOptions opts;
	Oid			source = fc_rewritten_table(RelationGetRelationName(rel),
											RelationGetNamespace(rel));

	/* (a heap table's rewrite into fastckpt creates its first storage) */
	if (OidIsValid(source) ? fc_relid_is_fastckpt(source) :
		rel->rd_createSubid == InvalidSubTransactionId)
	{
		sizing.row_size = FC_DEFAULT_ROW_SIZE;
		sizing.bytes_per_char = FC_DEFAULT_BYTES_PER_CHAR;
	}
	if (fc_statement_sizing != NULL)
		opts = *fc_statement_sizing;
	else
		(void) fc_relation_sizing_options(OidIsValid(source) ? source : RelationGetRelid(rel),
										  &opts);
	if (opts.row_size >= 0)
		sizing.row_size = opts.row_size;
	if (opts.bytes_per_char >= 0)
		sizing.bytes_per_char = opts.bytes_per_char;
	return sizing;
}

/* Image capacity for the table's rows, by its column types and sizing. */
uint32
fc_row_image_capacity(Relation rel, bool *exact)
{
	FcSizing	sizing = fc_table_sizing(rel);

	return fc_row_image_capacity_desc(RelationGetDescr(rel), &sizing, exact);
}

/*
 * What the table's rows need by their column types alone: as
 * fc_row_image_capacity, without the floor of the row size for unbounded
 * columns.  ALTER TABLE grows the slots by the growth of this (utility.c).
 */
uint32
fc_row_image_need(Relation rel)
{
	FcSizing	sizing = fc_table_sizing(rel);

	return fc_row_image_need_desc(RelationGetDescr(rel), &sizing);
}

/* ---- the statements that name the parameters (utility.c) ---- */

/* Before CREATE TABLE or CREATE TABLE AS: take the parameters out. */
void
fc_sizing_before_create(List **options, RangeVar *relation, FcSizingChange *sc)
{
	memset(sc, 0, sizeof(FcSizingChange));
	fc_sizing_options_init(&sc->change);
	sc->active = true;
	sc->given = fc_take_sizing_options(options, false, &sc->change);
	/* IF NOT EXISTS of a table that exists: nothing of it changes */
	sc->existed = OidIsValid(RangeVarGetRelid(relation, NoLock, true));
}

/*
 * Before ALTER TABLE: take the parameters out of SET and RESET, and the
 * table's own out of the catalog while PostgreSQL sets others.
 */
void
fc_sizing_before_alter(AlterTableStmt *stmt, FcSizingChange *sc)
{
	List	   *cmds = NIL;
	ListCell   *lc;
	bool		sets_others = false;
	bool		to_fastckpt = false;

	memset(sc, 0, sizeof(FcSizingChange));
	fc_sizing_options_init(&sc->change);
	if (stmt->objtype != OBJECT_TABLE)
		return;
	sc->relid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(sc->relid))
		return;
	sc->active = true;
	sc->was_fastckpt = fc_relid_is_fastckpt(sc->relid);
	(void) fc_relation_sizing_options(sc->relid, &sc->before);
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype == AT_SetAccessMethod && fc_is_fastckpt_name(cmd->name))
			to_fastckpt = true;
		if (cmd->subtype == AT_SetRelOptions || cmd->subtype == AT_ResetRelOptions)
		{
			List	   *defs = (List *) cmd->def;

			if (fc_take_sizing_options(&defs, cmd->subtype == AT_ResetRelOptions,
									   &sc->change))
				sc->given = true;
			cmd->def = (Node *) defs;
			if (defs == NIL)
				continue;		/* it named ours alone */
			sets_others = true;
		}
		cmds = lappend(cmds, cmd);
	}
	stmt->cmds = cmds;
	if (sc->given && !sc->was_fastckpt && !to_fastckpt)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("storage parameters fastckpt_row_size and fastckpt_bytes_per_char apply to fastckpt tables only"),
				 errdetail("\"%s\" does not use the fastckpt access method.", stmt->relation->relname)));
	if (sets_others && (sc->before.row_size >= 0 || sc->before.bytes_per_char >= 0))
	{
		LockRelationOid(sc->relid, ShareUpdateExclusiveLock);
		fc_hide_sizing_options(sc->relid);
	}
}

/* After the statement: record what it gave, or the session's sizing. */
void
fc_sizing_after(Node *parsetree, Oid created, FcSizingChange *sc)
{
	if (!sc->active)
		return;
	if (IsA(parsetree, AlterTableStmt))
	{
		Oid			relid = sc->relid;

		CommandCounterIncrement();
		if (!OidIsValid(get_rel_relkind(relid)))
			return;
		if (!sc->was_fastckpt && fc_relid_is_fastckpt(relid))
		{
			/* SET ACCESS METHOD fastckpt: as if created now */
			fc_record_sizing_options(relid, &sc->change);
			return;
		}
		if (sc->given || sc->before.row_size >= 0 || sc->before.bytes_per_char >= 0)
			fc_sizing_options_after_alter(relid, &sc->before, &sc->change);
		return;
	}
	if (sc->existed || !OidIsValid(created))
		return;
	if (fc_relid_is_fastckpt(created))
		fc_record_sizing_options(created, sc->given ? &sc->change : NULL);
	else if (sc->given)
		ereport(NOTICE,
				(errmsg("storage parameters fastckpt_row_size and fastckpt_bytes_per_char ignored: \"%s\" does not use the fastckpt access method",
						get_rel_name(created))));
}
