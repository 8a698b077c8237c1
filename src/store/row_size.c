/*-------------------------------------------------------------------------
 *
 * row_size.c
 *	  Upper bound of a row's stored size from its column types.
 *
 * Rows are stored as heap-format tuples (header, null bitmap, aligned
 * attributes), so the bound follows heap_form_tuple's arithmetic.
 * Fixed-width types and typmod-bounded ones (char(n), varchar(n), bit(n),
 * numeric(p,s)) give an exact bound; any other varlena makes the table use
 * the row size it is sized with (pg_fastckpt.default_row_size), or the
 * bounded part if that is larger.  char(n) and varchar(n) count the
 * encoding's longest character, or the bytes per character it is sized
 * with (pg_fastckpt.bytes_per_char) when lower: in UTF8 a char(84) of ASCII
 * text then takes 88 bytes, not 340, three times over in every slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "store/row_size.h"
#include "store/slot.h"

/* Largest stored size of a numeric(p,s): header + base-10000 digits. */
static int32
fc_numeric_max_size(int32 typmod)
{
	int32		precision;
	int32		ndigits;

	if (typmod < (int32) VARHDRSZ)
		return -1;
	precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	/* one extra digit group each side for alignment of the decimal point */
	ndigits = (precision + 3) / 4 + 2;
	return VARHDRSZ + sizeof(uint16) * 2 + ndigits * sizeof(int16);
}

static int32
fc_attr_max_size(Form_pg_attribute att, int bytes_per_char)
{
	Oid			typid = att->atttypid;
	int32		typmod = att->atttypmod;

	if (att->attlen > 0)
		return att->attlen;
	if (att->attlen != -1)
		return -1;
	/* a domain bounds its values by its base type's modifier */
	if (typmod < 0)
		typid = getBaseTypeAndTypmod(typid, &typmod);
	if (typid == NUMERICOID)
		return fc_numeric_max_size(typmod);
	if (typmod >= 0 && bytes_per_char > 0 &&
		(typid == BPCHAROID || typid == VARCHAROID))
		return VARHDRSZ + (typmod - VARHDRSZ) *
			Min(bytes_per_char, pg_database_encoding_max_length());
	if (typmod >= 0)
		return type_maximum_size(typid, typmod);
	return -1;
}

uint32
fc_row_image_capacity_desc(TupleDesc desc, const FcSizing *sizing, bool *exact)
{
	Size		size;
	bool		bounded = true;
	int			unbounded = 0;

	size = MAXALIGN(SizeofHeapTupleHeader + BITMAPLEN(desc->natts));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int32		max;

		if (att->attisdropped)
			continue;			/* stored as NULL */
		max = fc_attr_max_size(att, sizing->bytes_per_char);
		if (max < 0)
		{
			bounded = false;
			unbounded++;
			/* leave room for at least a short value of each */
			size += 16;
			continue;
		}
		size = att_align_nominal(size, att->attalign) + max;
	}
	size = MAXALIGN(size);
	if (!bounded)
		size = Max(size, (Size) sizing->row_size);
	if (exact)
		*exact = bounded;
	return (uint32) Min(size, (Size) FC_MAX_IMAGE_CAPACITY);
}

/*
 * What rows of this shape need, for comparing shapes before and after an
 * ALTER TABLE (utility.c): as fc_row_image_capacity_desc without the row
 * size floor, and with the worst alignment padding for every column after
 * one whose length varies (its end, and so the next column's padding,
 * depends on the value): a column changed to a type with wider alignment
 * then needs more, as a real row may.
 */
uint32
fc_row_image_need_desc(TupleDesc desc, const FcSizing *sizing)
{
	Size		size = SizeofHeapTupleHeader + BITMAPLEN(desc->natts);
	bool		unaligned = false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int32		max;
		Size		align = att_align_nominal(1, att->attalign) - 1;

		if (att->attisdropped)
			continue;
		max = fc_attr_max_size(att, sizing->bytes_per_char);
		size = unaligned ? size + align : att_align_nominal(size, att->attalign);
		size += max < 0 ? 16 : max;
		if (att->attlen < 0)
			unaligned = true;
	}
	return (uint32) Min(size, (Size) FC_MAX_IMAGE_CAPACITY);
}
