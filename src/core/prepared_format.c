/*-------------------------------------------------------------------------
 *
 * prepared_format.c
 *	  Sealing, checking and walking a prepared transaction's file.
 *
 *-------------------------------------------------------------------------
 */
#include "prepared_format.h"

#include <string.h>

#include "crc32c.h"

void
fc_prepared_seal(void *file)
{
	fc_prepared_header *hdr = (fc_prepared_header *) file;

	hdr->crc = fc_crc32c((const char *) file + sizeof(uint32_t),
						 hdr->len - sizeof(uint32_t));
}

const uint32_t *
fc_prepared_xids(const fc_prepared_header *hdr)
{
	return (const uint32_t *) ((const char *) hdr + sizeof(fc_prepared_header));
}

static const char *
fc_prepared_entries(const fc_prepared_header *hdr)
{
	return (const char *) hdr + sizeof(fc_prepared_header) +
		FC_PREPARED_ALIGNED((uint64_t) hdr->nxids * sizeof(uint32_t));
}

const char *
fc_prepared_check(const void *file, size_t size)
{
	fc_prepared_header hdr;
	fc_prepared_cursor cur;
	const fc_prepared_slot *slot;
	const char *image;

	if (size < sizeof(hdr))
		return "the file is shorter than its header";
	memcpy(&hdr, file, sizeof(hdr));
	if (hdr.magic != FC_PREPARED_MAGIC)
		return "the file does not start with the prepared transaction magic number";
	if (hdr.version < 1 || hdr.version > FC_PREPARED_VERSION)
		return "the file is of another format version";
	if (hdr.len != size)
		return "the file's length differs from the length its header gives";
	if (fc_crc32c((const char *) file + sizeof(uint32_t),
				  size - sizeof(uint32_t)) != hdr.crc)
		return "the file's CRC does not match its contents";
	if (hdr.gid[FC_PREPARED_GID_SIZE - 1] != '\0')
		return "the transaction identifier is not terminated";
	if (sizeof(hdr) + FC_PREPARED_ALIGNED((uint64_t) hdr.nxids * sizeof(uint32_t)) > size)
		return "the xids overrun the file";
	fc_prepared_cursor_init(&cur, (const fc_prepared_header *) file);
	while (cur.left > 0)
		if (!fc_prepared_next(&cur, &slot, &image))
			return "a slot entry overruns the file";
	if (cur.pos != cur.end)
		return "the file has bytes after its last slot entry";
	return NULL;
}

void
fc_prepared_cursor_init(fc_prepared_cursor *cur, const fc_prepared_header *hdr)
{
	cur->pos = fc_prepared_entries(hdr);
	cur->end = (const char *) hdr + hdr->len;
	cur->left = hdr->nslots;
}

int
fc_prepared_next(fc_prepared_cursor *cur, const fc_prepared_slot **slot,
				 const char **image)
{
	const fc_prepared_slot *s;

	if (cur->left == 0 || (size_t) (cur->end - cur->pos) < sizeof(fc_prepared_slot))
		return 0;
	s = (const fc_prepared_slot *) cur->pos;
	if (s->op < FC_PREP_INSERT || s->op > FC_PREP_LOCK ||
		((s->op == FC_PREP_DELETE || s->op == FC_PREP_LOCK) && s->len != 0) ||
		(s->op == FC_PREP_LOCK && (s->lock_mode > FC_PREP_LOCK_EXCLUSIVE ||
								   s->xmax_flags > FC_PREP_LOCK_IF_NOT_COMMITTED)) ||
		fc_prepared_slot_size(s->len) > (uint64_t) (cur->end - cur->pos))
		return 0;
	*slot = s;
	*image = cur->pos + sizeof(fc_prepared_slot);
	cur->pos += fc_prepared_slot_size(s->len);
	cur->left--;
	return 1;
}
