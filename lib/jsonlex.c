/* lib/jsonlex.c — the one JSON lexer (see lib/jsonlex.h). */
#include "lib/jsonlex.h"

#include <string.h>

size_t
jsonlex_escape(const unsigned char *t, size_t n, size_t i, uint32_t *cp)
{
	uint32_t u, lo;

	if (n - i < 2)
		return 0;
	switch (t[i + 1]) {
	case '"': *cp = '"'; return 2;
	case '\\': *cp = '\\'; return 2;
	case '/': *cp = '/'; return 2;
	case 'b': *cp = '\b'; return 2;
	case 'f': *cp = '\f'; return 2;
	case 'n': *cp = '\n'; return 2;
	case 'r': *cp = '\r'; return 2;
	case 't': *cp = '\t'; return 2;
	case 'u': break;
	default: return 0;
	}
	if (n - i < 6 || ki_hex4(t + i + 2, &u) != 0)
		return 0;
	if (u >= 0xD800 && u <= 0xDBFF && n - i >= 12 && t[i + 6] == '\\' &&
	    t[i + 7] == 'u' && ki_hex4(t + i + 8, &lo) == 0 && lo >= 0xDC00 &&
	    lo <= 0xDFFF) {
		*cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
		return 12;
	}
	*cp = u;
	return 6;
}

static size_t
digits_end(const unsigned char *t, size_t n, size_t i)
{
	while (i < n && t[i] >= '0' && t[i] <= '9')
		i++;
	return i;
}

int
jsonlex_number(const unsigned char *t, size_t n, size_t i, jsonlex_num *num)
{
	size_t j;

	num->neg = i < n && t[i] == '-';
	i += (size_t)num->neg;
	num->is_int = 1;
	if (i < n && t[i] == '0')
		j = i + 1;
	else if (i < n && t[i] >= '1' && t[i] <= '9')
		j = digits_end(t, n, i + 1);
	else
		return KI_EINVAL;
	num->digits = j - i;
	i = j;
	if (i < n && t[i] == '.') {
		num->is_int = 0;
		if (++i >= n || t[i] < '0' || t[i] > '9')
			return KI_EINVAL;
		i = digits_end(t, n, i + 1);
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		num->is_int = 0;
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if (i >= n || t[i] < '0' || t[i] > '9')
			return KI_EINVAL;
		i = digits_end(t, n, i + 1);
	}
	num->end = i;
	return KI_OK;
}

