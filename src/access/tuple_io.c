/*-------------------------------------------------------------------------
 *
 * tuple_io.c
 *	  Moving row images between executor slots and fastckpt slots.
 *
 * Images are heap-format tuples (header, null bitmap, data), so reading
 * one back is a memcpy into a heap tuple slot; the header fields that only
 * matter for system columns (xmin, xmax, cmin, ctid) are filled from the
 * version's metadata on the way out.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/toast_compression.h"
#include "access/toast_internals.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "access/fastckpt_am.h"
#include "procs/procs.h"
#include "recovery/call_replay.h"
#include "txn/write_set.h"

const TupleTableSlotOps *
fc_slot_callbacks(Relation rel)
{
	return &TTSOpsHeapTuple;
}

/*
 * The transaction fields of a row as heap shows them in system columns:
 * xmax is the deleter or, failing one, the row's locker(s), as heap keeps
 * lockers in xmax (the "xmax = 0 means inserted" test of ON CONFLICT ...
 * RETURNING relies on it).
 */
void
fc_set_system_columns(HeapTupleHeader td, TransactionId xmin, CommandId cmin,
					  TransactionId xmax, TransactionId locker, bool locker_is_multi)
{
	td->t_infomask &= ~(HEAP_XACT_MASK);
	td->t_infomask2 &= ~(HEAP2_XACT_MASK);
	HeapTupleHeaderSetXmin(td, xmin);
	HeapTupleHeaderSetCmin(td, cmin);
	if (TransactionIdIsValid(xmax))
		HeapTupleHeaderSetXmax(td, xmax);
	else if (TransactionIdIsValid(locker))
	{
		HeapTupleHeaderSetXmax(td, locker);
		td->t_infomask |= HEAP_XMAX_LOCK_ONLY |
			(locker_is_multi ? HEAP_XMAX_IS_MULTI : 0);
	}
	else
	{
		HeapTupleHeaderSetXmax(td, InvalidTransactionId);
		td->t_infomask |= HEAP_XMAX_INVALID;
	}
}

/* Fill a heap tuple (data area right after the header) from a version. */
static void
fc_fill_tuple(HeapTuple tuple, Relation rel, uint64 slotno, const FcVisible *v)
{
	HeapTupleHeader td = (HeapTupleHeader) ((char *) tuple + HEAPTUPLESIZE);

	memcpy(td, v->data, v->len);
	tuple->t_len = v->len;
	tuple->t_data = td;
	tuple->t_tableOid = RelationGetRelid(rel);
	fc_slot_to_tid(slotno, &tuple->t_self);

	fc_set_system_columns(td, v->xmin, v->cmin, v->xmax, v->locker, v->locker_is_multi);
	td->t_infomask |= HEAP_XMIN_COMMITTED;
	td->t_ctid = tuple->t_self;
	fc_note_read_stamp(v->stamp);
}

/* Copy a version into the executor slot, which owns the copy. */
void
fc_store_version(TupleTableSlot *slot, Relation rel, uint64 slotno,
				 const FcVisible *v)
{
	HeapTuple	tuple;

	tuple = (HeapTuple) MemoryContextAlloc(slot->tts_mcxt, HEAPTUPLESIZE + v->len);
	fc_fill_tuple(tuple, rel, slotno, v);
	ExecStoreHeapTuple(tuple, slot, true);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * Copy a version into a buffer that a scan reuses for every row it returns
 * into the same slot, sparing an allocation per row.  The slot does not own
 * the buffer: like a heap buffer tuple it stays valid until the scan
 * returns the next row into that slot, and consumers that keep rows copy
 * them (materialize) as they must for heap.  The buffer lives in the
 * slot's memory context, so it outlives the slot's contents.
 */
void
fc_store_version_buffered(TupleTableSlot *slot, Relation rel, uint64 slotno,
						  const FcVisible *v, HeapTuple *buffer,
						  uint32 *buffer_capacity, uint32 capacity)
{
	/* a rescan may meet a new storage with larger slots (TRUNCATE) */
	if (*buffer == NULL || *buffer_capacity < v->len)
	{
		*buffer_capacity = Max(capacity, v->len);
		*buffer = (HeapTuple) MemoryContextAlloc(slot->tts_mcxt,
												 HEAPTUPLESIZE + *buffer_capacity);
	}
	fc_fill_tuple(*buffer, rel, slotno, v);
	ExecStoreHeapTuple(*buffer, slot, false);
	slot->tts_tableOid = RelationGetRelid(rel);
}

/*
 * Compress the largest uncompressed varlena column in place; false when
 * nothing is left to compress.
 */
static bool
fc_compress_largest(TupleDesc desc, Datum *values, bool *isnull,
					bool *tried)
{
	int			best = -1;
	Size		best_size = 32;		/* smaller values do not compress */

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		struct varlena *v;

		if (att->attlen != -1 || isnull[i] || tried[i] ||
			att->attstorage == TYPSTORAGE_PLAIN)
			continue;
		v = (struct varlena *) DatumGetPointer(values[i]);
		if (VARATT_IS_EXTENDED(v))
			continue;
		if (VARSIZE_ANY(v) > best_size)
		{
			best = i;
			best_size = VARSIZE_ANY(v);
		}
	}
	if (best < 0)
		return false;
	tried[best] = true;
	{
		Datum		c = toast_compress_datum(values[best],
											 TupleDescAttr(desc, best)->attcompression);

		if (DatumGetPointer(c) != NULL)
			values[best] = c;
	}
	return true;
}

/*
 * A value that an expanded object (a PL/pgSQL array or record variable, as
 * a generic plan passes it) was flattened into keeps a 4-byte header where
 * the same value from a constant gets a 1-byte one (heap_fill_tuple makes
 * short headers of plain values only).  Re-form such a tuple, so that a
 * row's image depends on its values alone: a replayed call must write the
 * bytes the call wrote, whichever plan either ran with.  Other writes are
 * never compared, and skip this.
 */
static HeapTuple
fc_shorten_headers(HeapTuple tuple, TupleDesc desc)
{
	Datum	   *values;
	bool	   *isnull;
	bool		shorten = false;

	if (!HeapTupleHasVarWidth(tuple))
		return tuple;
	values = palloc(sizeof(Datum) * desc->natts);
	isnull = palloc(sizeof(bool) * desc->natts);
	heap_deform_tuple(tuple, desc, values, isnull);
	for (int i = 0; i < desc->natts && !shorten; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Pointer		v = DatumGetPointer(values[i]);

		shorten = att->attlen == -1 && !isnull[i] &&
			att->attstorage != TYPSTORAGE_PLAIN &&
			VARATT_IS_4B_U(v) && VARATT_CAN_MAKE_SHORT(v);
	}
	if (shorten)
		tuple = heap_form_tuple(desc, values, isnull);
	pfree(values);
	pfree(isnull);
	return tuple;
}

/*
 * Does the row hold a composite value (or an array of them)?  Their fields
 * keep the headers they were formed with, which differ, like a column's
 * (fc_shorten_headers), with the plan a call's statements ran with: a
 * registered call that writes one is logged as row images instead, since
 * replay could write other bytes.  Composite, domain and array types of
 * composites are all user-defined, or record.
 */
static bool
fc_row_has_composite(HeapTuple tuple, TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			typid;
		Oid			elem;

		if (att->attlen != -1 || att->attisdropped ||
			(att->atttypid < FirstNormalObjectId && att->atttypid != RECORDOID) ||
			heap_attisnull(tuple, i + 1, desc))
			continue;
		typid = getBaseType(att->atttypid);
		if (type_is_rowtype(typid))
			return true;
		elem = get_element_type(typid);
		if (OidIsValid(elem) && type_is_rowtype(getBaseType(elem)))
			return true;
	}
	return false;
}

/*
 * Form the image to store for the row in an executor slot.  Out-of-line
 * values are pulled inline (fastckpt has no TOAST table); a row that does
 * not fit the table's slots is compressed column by column, like heap's
 * TOAST does before going out of line, and refused if it still does not.
 */
HeapTuple
fc_form_image(Relation rel, FcTable *tbl, TupleTableSlot *slot)
{
	bool		shouldFree;
	HeapTuple	tuple = ExecFetchSlotHeapTuple(slot, true, &shouldFree);
	TupleDesc	desc = RelationGetDescr(rel);
	uint32		capacity = tbl->layout.image_capacity;

	if (HeapTupleHasExternal(tuple))
		tuple = toast_flatten_tuple(tuple, desc);
	/* only a logged call's writes are compared byte for byte, at replay */
	if (fc_call_active || fc_replaying_call)
		tuple = fc_shorten_headers(tuple, desc);
	if (fc_call_active && fc_row_has_composite(tuple, desc))
		fc_call_taint(FC_FALLBACK_NONDETERMINISTIC);

	if (tuple->t_len > capacity)
	{
		bool		compressed = false;
		Datum	   *values = palloc(sizeof(Datum) * desc->natts);
		bool	   *isnull = palloc(sizeof(bool) * desc->natts);
		bool	   *tried = palloc0(sizeof(bool) * desc->natts);
		Size		len = tuple->t_len;

		heap_deform_tuple(tuple, desc, values, isnull);
		while (len > capacity && fc_compress_largest(desc, values, isnull, tried))
		{
			compressed = true;
			len = heap_compute_data_size(desc, values, isnull) +
				MAXALIGN(SizeofHeapTupleHeader + BITMAPLEN(desc->natts));
		}
		if (len <= capacity)
		{
			tuple = heap_form_tuple(desc, values, isnull);
			len = tuple->t_len;
		}
		if (len > capacity)
		{
			char	   *relname = fc_table_name_for_message(RelationGetRelid(rel));

			if (len > FC_MAX_IMAGE_CAPACITY)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("row is too big for fastckpt table \"%s\"",
								relname ? relname : RelationGetRelationName(rel)),
						 errdetail("The row needs %zu bytes%s; no fastckpt table holds rows of more than %u bytes.",
								   len, compressed ? " after compression" : "",
								   (unsigned int) FC_MAX_IMAGE_CAPACITY),
						 errhint("Values are never stored out of line in fastckpt tables: keep rows this large in a heap table.")));
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("row is too big for fastckpt table \"%s\"",
							relname ? relname : RelationGetRelationName(rel)),
					 errdetail("The row needs %zu bytes%s; this table's slots hold %u bytes.",
							   len, compressed ? " after compression" : "", capacity),
					 errhint("Slot size is fixed when the table's storage is created. Give the table more room with "
							 "ALTER TABLE ... SET (fastckpt_row_size = ...) for columns without a length limit, "
							 "or SET (fastckpt_bytes_per_char = 0) for char(n) and varchar(n), "
							 "or declare tighter column types.")));
		}
	}

	/*
	 * Stored images carry no datum header (heap_form_tuple's type id and
	 * length share those bytes with the transaction fields): clear it as
	 * heap_prepare_insert does, so an image never names a row type that may
	 * have been dropped since, e.g. a rewrite's transient table.
	 */
	tuple->t_data->t_infomask &= ~HEAP_XACT_MASK;
	tuple->t_data->t_infomask2 &= ~HEAP2_XACT_MASK;
	tuple->t_data->t_infomask |= HEAP_XMAX_INVALID;
	HeapTupleHeaderSetXmin(tuple->t_data, InvalidTransactionId);
	HeapTupleHeaderSetCmin(tuple->t_data, FirstCommandId);
	HeapTupleHeaderSetXmax(tuple->t_data, InvalidTransactionId);
	return tuple;
}

