/* harness/csv.c — RFC 4180 CSV records read and written, for the Liger
 * importer and exporter. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "harness/liger_int.h"

/* ====================================================================== */
/* RFC 4180 CSV                                                            */

void
liger_record_init(liger_record *r)
{
	memset(r, 0, sizeof(*r));
	ki_buf_init(&r->store);
}

void
liger_record_free(liger_record *r)
{
	ki_buf_free(&r->store);
	liger_record_init(r);
}

void
liger_csv_init(liger_csv *c, const char *text, size_t len)
{
	c->text = text;
	c->len = len;
	c->pos = 0;
	c->line = 1;
}

/* Skips to the start of the next line after a malformed record. */
static void
csv_skip_line(liger_csv *c)
{
	while (c->pos < c->len && c->text[c->pos] != '\n')
		c->pos++;
	if (c->pos < c->len) {
		c->pos++;
		c->line++;
	}
}

/* Reads one record without skipping blank lines. Returns as
 * liger_csv_next(). */
static int
csv_read(liger_csv *c, liger_record *r, ki_buf *err)
{
	size_t off[LIGER_CSV_MAX_FIELDS];
	size_t start = c->pos, i;
	const char *t = c->text;
	int rc = KI_OK;

	ki_buf_reset(&r->store);
	if (r->store.oom)
		return KI_ENOMEM;
	r->nfields = 0;
	r->line = c->line;
	for (;;) {
		if (r->nfields == LIGER_CSV_MAX_FIELDS) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: more than %d fields",
				    r->line, LIGER_CSV_MAX_FIELDS);
			rc = KI_ELIMIT;
			goto bad;
		}
		off[r->nfields] = r->store.len;
		if (c->pos < c->len && t[c->pos] == '"') {
			size_t qline = c->line;

			c->pos++;
			for (;;) {
				if (c->pos >= c->len) {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: a quoted "
						    "field is not closed before the end "
						    "of the input", qline);
					c->pos = c->len;
					return KI_EINVAL;
				}
				if (t[c->pos] == '"') {
					if (c->pos + 1 < c->len &&
					    t[c->pos + 1] == '"') {
						ki_buf_putc(&r->store, '"');
						c->pos += 2;
						continue;
					}
					c->pos++;
					break;
				}
				if (t[c->pos] == '\n')
					c->line++;
				ki_buf_putc(&r->store, t[c->pos]);
				c->pos++;
			}
			if (c->pos < c->len && t[c->pos] != ',' &&
			    t[c->pos] != '\n' && !(t[c->pos] == '\r' &&
			    c->pos + 1 < c->len && t[c->pos + 1] == '\n')) {
				if (err != NULL)
					ki_buf_printf(err, "line %zu: field %zu: "
					    "text after the closing quote",
					    c->line, r->nfields + 1);
				rc = KI_EINVAL;
				goto bad;
			}
		} else {
			size_t s = c->pos;

			while (c->pos < c->len && t[c->pos] != ',' &&
			    t[c->pos] != '\n') {
				if (t[c->pos] == '"') {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: field "
						    "%zu: a quote inside an unquoted "
						    "field", c->line, r->nfields + 1);
					rc = KI_EINVAL;
					goto bad;
				}
				if (t[c->pos] == '\r' && !(c->pos + 1 < c->len &&
				    t[c->pos + 1] == '\n')) {
					if (err != NULL)
						ki_buf_printf(err, "line %zu: field "
						    "%zu: a carriage return outside "
						    "quotes", c->line, r->nfields + 1);
					rc = KI_EINVAL;
					goto bad;
				}
				if (t[c->pos] == '\r')
					break;
				c->pos++;
			}
			ki_buf_append(&r->store, t + s, c->pos - s);
		}
		ki_buf_putc(&r->store, '\0');
		r->nfields++;
		if (c->pos - start > LIGER_CSV_MAX_RECORD) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: the record is longer "
				    "than %u bytes", r->line,
				    (unsigned)LIGER_CSV_MAX_RECORD);
			rc = KI_ELIMIT;
			goto bad;
		}
		if (c->pos >= c->len)
			break;
		if (t[c->pos] == ',') {
			c->pos++;
			continue;
		}
		if (t[c->pos] == '\r')
			c->pos++;
		c->pos++; /* the LF */
		c->line++;
		break;
	}
	if (r->store.oom)
		return KI_ENOMEM;
	for (i = 0; i < r->nfields; i++) {
		r->field[i] = r->store.data + off[i];
		r->len[i] = (i + 1 < r->nfields ? off[i + 1] : r->store.len) -
		    off[i] - 1;
	}
	return 1;
bad:
	csv_skip_line(c);
	return rc;
}

int
liger_csv_next(liger_csv *c, liger_record *r, ki_buf *err)
{
	for (;;) {
		if (c->pos >= c->len)
			return 0;
		/* Blank lines are no records (as Python's csv reader has it). */
		if (c->text[c->pos] == '\n') {
			c->pos++;
			c->line++;
			continue;
		}
		if (c->text[c->pos] == '\r' && c->pos + 1 < c->len &&
		    c->text[c->pos + 1] == '\n') {
			c->pos += 2;
			c->line++;
			continue;
		}
		return csv_read(c, r, err);
	}
}

int
liger_csv_put_field(ki_buf *out, const char *s, size_t n)
{
	size_t i;

	if (memchr(s, ',', n) == NULL && memchr(s, '"', n) == NULL &&
	    memchr(s, '\r', n) == NULL && memchr(s, '\n', n) == NULL)
		return ki_buf_append(out, s, n);
	ki_buf_putc(out, '"');
	for (i = 0; i < n; i++) {
		if (s[i] == '"')
			ki_buf_putc(out, '"');
		ki_buf_putc(out, s[i]);
	}
	return ki_buf_putc(out, '"');
}

int
liger_csv_header(ki_buf *out)
{
	int k;

	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (k > 0)
			ki_buf_putc(out, ',');
		ki_buf_puts(out, lg_column_names[k]);
	}
	return ki_buf_puts(out, "\r\n");
}

