/* bench/pair.c — latency of one query on two servers, measured side by
 * side: requests go to A and B in turn, one keep-alive connection each, so
 * that whatever else the machine does at a moment weighs on both alike.
 *
 *   pair URL_A URL_B N SECONDS
 *
 * Sends N GETs to each (after 50 warm-up requests each), or as many as
 * SECONDS allow (at least 100), checks that every answer is 200, and
 * prints one line:
 *
 *   KIPAIR n=N a_p50_us=… a_p99_us=… a_max_us=… b_p50_us=… b_p99_us=…
 *   b_max_us=… bad=…
 *
 * Times are from the start of the request to the end of the body, as the
 * client sees them (libcurl's cost is in both). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static CURL *
handle(const char *url)
{
	CURL *h = curl_easy_init();

	if (h == NULL) {
		fprintf(stderr, "pair: curl_easy_init failed\n");
		exit(1);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	return h;
}

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One GET: its time in µs, or -1 when it failed or was not 200. */
static double
get(CURL *h)
{
	double t0 = now_us(), t1;
	long code = 0;

	if (curl_easy_perform(h) != CURLE_OK)
		return -1;
	t1 = now_us();
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	return code == 200 ? t1 - t0 : -1;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile of sorted v[0..n-1] (nearest rank). */
static double
pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)n + 0.999999);

	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}

int
main(int argc, char **argv)
{
	CURL *a, *b;
	double *ta, *tb, end;
	size_t n, bad = 0;

	if (argc != 5 || (n = strtoul(argv[3], NULL, 10)) < 100) {
		fprintf(stderr, "usage: pair URL_A URL_B N SECONDS (N >= 100)\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	a = handle(argv[1]);
	b = handle(argv[2]);
	ta = malloc(n * sizeof(*ta));
	tb = malloc(n * sizeof(*tb));
	if (ta == NULL || tb == NULL)
		return 1;
	for (int i = 0; i < 50; i++) {
		bad += get(a) < 0;
		bad += get(b) < 0;
	}
	end = now_us() + atof(argv[4]) * 1e6;
	for (size_t i = 0; i < n; i++) {
		if (i >= 100 && now_us() > end) {
			n = i;
			break;
		}
		/* Which goes first alternates too. */
		if (i % 2 == 0) {
			ta[i] = get(a);
			tb[i] = get(b);
		} else {
			tb[i] = get(b);
			ta[i] = get(a);
		}
		bad += (ta[i] < 0) + (tb[i] < 0);
	}
	qsort(ta, n, sizeof(*ta), cmp);
	qsort(tb, n, sizeof(*tb), cmp);
	printf("KIPAIR n=%zu a_p50_us=%.0f a_p99_us=%.0f a_max_us=%.0f "
	    "b_p50_us=%.0f b_p99_us=%.0f b_max_us=%.0f bad=%zu\n", n,
	    pct(ta, n, 50), pct(ta, n, 99), ta[n - 1], pct(tb, n, 50),
	    pct(tb, n, 99), tb[n - 1], bad);
	curl_easy_cleanup(a);
	curl_easy_cleanup(b);
	curl_global_cleanup();
	free(ta);
	free(tb);
	return bad != 0;
}
