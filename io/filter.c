/*
 * filter.c - what a walk leaves out: --exclude and --include rules, with
 * rsync's meaning for the common cases; a filter's life and its encoding.
 * The filter's other part, the paths of --files-from, is filter_paths.c's.
 *
 * A rule is a glob (fnmatch(3)) with two marks taken off it: a trailing
 * '/' (the rule matches directories only) and a leading '/' (anchored: the
 * glob must match the whole path beneath the source's top). A glob with
 * no '/' left in it matches an entry's last name; one with a '/' inside
 * matches as many trailing components of the path as it has, so "b/c"
 * matches "a/b/c" (rsync's rule); "**" crosses slashes (fnmatch without
 * FNM_PATHNAME, where every '*' then crosses them). The first rule that
 * matches decides; no match keeps the entry. The walk does not enter an
 * excluded directory.
 *
 * Each rule keeps the literal bytes its glob must begin and end with, and
 * the runs between its wildcards, and the rules are indexed by the last
 * byte their subject can end with (and by whether they take directories
 * only), so that most names are turned down by a byte or two, not by
 * fnmatch: 50 rules over a tree of 100,000 entries must not slow the walk
 * by more than about 5% (tests/bench/bench_walk.c, doc/benchmarks.md).
 *
 * A filter travels to a pull's server as records "-PATTERN", "+PATTERN"
 * and "fPATH", each ended by a NUL, and is read back through the same
 * checks (io_filter_decode).
 *
 * Threading: a filter is built by one thread, then read-only (matching is
 * thread-safe).
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

struct io__filter_rule {
	char *text;   /* as given, for the encoding */
	char *glob;   /* without its marks */
	bool include; /* else exclude */
	bool dir_only, anchored, path, dstar;
	unsigned slashes; /* in glob: components matched is slashes + 1 */
	size_t head_len;  /* literal bytes the subject must start with */
	const char *tail; /* and end with (inside glob) */
	size_t tail_len;
	bool literal; /* glob has no special character: compare bytes */
	/*
	 * The literal runs between its wildcards, each ended by a NUL, then an
	 * empty one: a subject must hold them in this order (memmem) before
	 * fnmatch is asked. NULL when the glob has a '\\' (no such runs told).
	 */
	char *runs;
};

#define SPECIAL "*?[]\\"

int io_filter_create(struct io_filter **f_out)
{
	struct io_filter *f = calloc(1, sizeof(*f));

	if (!f)
		return rcp_err(-ENOMEM, "out of memory for a filter");
	*f_out = f;
	return 0;
}

void io_filter_destroy(struct io_filter *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n_rules; i++) {
		free(f->rule[i].text);
		free(f->rule[i].glob);
		free(f->rule[i].runs);
	}
	for (i = 0; i < f->n_paths; i++)
		free(f->path[i]);
	for (i = 0; i < 2 * 256; i++)
		free(f->by_last[i / 256][i % 256]);
	free(f->rule);
	free(f->path);
	free(f);
}

const char *io__text_problem(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, k, n;

	while (i < len) {
		if (s[i] < 0x20 || s[i] == 0x7f)
			return "has a control character";
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if (s[i] >= 0xc2 && s[i] <= 0xdf)
			n = 1;
		else if (s[i] >= 0xe0 && s[i] <= 0xef)
			n = 2;
		else if (s[i] >= 0xf0 && s[i] <= 0xf4)
			n = 3;
		else
			return "is not UTF-8";
		if (len - i <= n)
			return "is not UTF-8";
		for (k = 1; k <= n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return "is not UTF-8";
		i += n + 1;
	}
	return NULL;
}

/*
 * r->runs of r->glob between its literal head and tail, which are checked
 * on their own (see struct io__filter_rule); false when out of memory.
 */
static bool rule_runs(struct io__filter_rule *r)
{
	const char *g = r->glob + r->head_len, *end = r->tail;
	char *out = malloc(2 * strlen(r->glob) + 2), *o = out;

	if (!out)
		return false;
	r->runs = out;
	while (g < end) {
		if (*g == '\\') {
			free(out);
			r->runs = NULL;
			return true;
		}
		if (*g == '*' || *g == '?' || *g == '[') {
			if (o > out && o[-1])
				*o++ = '\0';
			if (*g == '[') { /* past the bracket: "[!]x]" and "[]x]" hold a ']' */
				g += 1 + (g[1] == '!' || g[1] == '^');
				g += *g == ']';
				while (*g && *g != ']')
					g++;
			}
			g += *g != '\0';
			continue;
		}
		*o++ = *g++;
	}
	if (o > out && o[-1])
		*o++ = '\0';
	*o = '\0';
	return true;
}

/*
 * Whether the n bytes at a and b are the same, compared from the last: a
 * few bytes each time, where a call of memcmp would cost more than the
 * comparison, and a rule's tail differs from a name near its end.
 */
static inline bool same_back(const char *a, const char *b, size_t n)
{
	while (n > 0) {
		n--;
		if (a[n] != b[n])
			return false;
	}
	return true;
}

/* Whether s (len bytes) holds r's literal runs in order: else no fnmatch can match. */
static bool runs_in(const struct io__filter_rule *r, const char *s, size_t len)
{
	const char *run;
	size_t at = r->head_len, n, end = len - r->tail_len; /* between the head and the tail */

	/* runs and names are a few bytes: a plain scan costs less than memmem's set-up */
	for (run = r->runs; run && *run; run += n + 1) {
		n = strlen(run);
		while (at + n <= end && !same_back(s + at, run, n))
			at++;
		if (at + n > end)
			return false;
		at += n;
	}
	return true;
}

_Static_assert(IO_FILTER_MAX_STARS == 16, "the sentence of io_filter_rule says 16");

/* How many '*' pattern holds (escaped ones too: an upper bound). */
static size_t stars(const char *pattern)
{
	size_t n = 0;

	for (; *pattern; pattern++)
		n += *pattern == '*';
	return n;
}

/* The literal head and tail of r->glob, and whether it is all literal. */
static void rule_literals(struct io__filter_rule *r)
{
	size_t len = strlen(r->glob), t = len;

	r->head_len = strcspn(r->glob, SPECIAL);
	while (t > 0 && !strchr(SPECIAL, r->glob[t - 1]))
		t--;
	r->tail = r->glob + t;
	r->tail_len = len - t;
	r->literal = r->head_len == len;
}

int io_filter_rule(struct io_filter *f, bool include, const char *pattern)
{
	size_t len = strlen(pattern), start = 0, end = len;
	const char *why = io__text_problem(pattern, len);
	struct io__filter_rule *grown, *r;

	if (!why && len >= IO_PATH_MAX)
		why = "is longer than 4095 bytes";
	if (!why && stars(pattern) > IO_FILTER_MAX_STARS)
		why = "has more than 16 '*' (fnmatch would take exponential time over some "
		      "names)";
	if (!why && f->n_rules >= IO_FILTER_MAX_RULES)
		return rcp_err(-E2BIG, "more than %d --exclude and --include patterns",
			       IO_FILTER_MAX_RULES);
	while (end > 0 && pattern[end - 1] == '/')
		end--;
	while (start < end && pattern[start] == '/')
		start++;
	if (!why && start == end)
		why = "matches no name";
	if (why)
		return rcp_err(-EINVAL, "the pattern '%.64s%s' %s", pattern, len > 64 ? "..." : "",
			       why);
	grown = realloc(f->rule, (f->n_rules + 1) * sizeof(*grown));
	if (!grown)
		return rcp_err(-ENOMEM, "out of memory for a pattern");
	f->rule = grown;
	r = &f->rule[f->n_rules];
	*r = (struct io__filter_rule){.include = include,
				      .dir_only = end<len, .anchored = start> 0};
	r->text = strdup(pattern);
	r->glob = strndup(pattern + start, end - start);
	if (!r->text || !r->glob) {
		free(r->text);
		free(r->glob);
		return rcp_err(-ENOMEM, "out of memory for a pattern");
	}
	for (const char *p = r->glob; *p; p++)
		r->slashes += *p == '/';
	r->path = r->anchored || r->slashes > 0;
	r->dstar = strstr(r->glob, "**") != NULL;
	rule_literals(r);
	if (!rule_runs(r)) {
		free(r->text);
		free(r->glob);
		return rcp_err(-ENOMEM, "out of memory for a pattern");
	}
	f->n_rules++;
	f->bytes += len + 2;
	return 0;
}

/*
 * The bytes a subject of r can end with, into last[]: its tail's last
 * byte; or, for a glob that ends in a plain bracket expression ("*.[oa]",
 * "x[0-9]"), the bytes it lists. false: any byte (a glob ending in '*' or
 * '?', or in a bracket that negates or names a class).
 */
static bool rule_last(const struct io__filter_rule *r, bool last[256])
{
	size_t len = strlen(r->glob), open, i;
	const unsigned char *g = (const unsigned char *)r->glob;

	memset(last, 0, 256 * sizeof(bool));
	if (r->tail_len) {
		last[(unsigned char)r->tail[r->tail_len - 1]] = true;
		return true;
	}
	if (len < 3 || g[len - 1] != ']')
		return false;
	for (open = len - 1; open > 0 && g[open - 1] != '['; open--)
		if (g[open - 1] == ']' || g[open - 1] == '\\' || g[open - 1] == '/')
			return false; /* not a plain one */
	if (open == 0 || open == len - 1 || g[open] == '!' || g[open] == '^' ||
	    (open >= 2 && g[open - 2] == '\\'))
		return false;
	if (memchr(g, '[', open - 1))
		return false; /* "*[a[b]": the '[' found may sit inside an earlier bracket */
	for (i = open; i < len - 1; i++) {
		if (g[i] == '-' && i > open && i + 1 < len - 1) {
			if (g[i - 1] > g[i + 1])
				return false; /* a range fnmatch reads as it will */
			for (unsigned b = g[i - 1]; b <= g[i + 1]; b++)
				last[b] = true;
			continue;
		}
		last[g[i]] = true;
	}
	return true;
}

/* The rules by the kind of entry and the last byte they can match; false when out of memory. */
static bool rules_index(struct io_filter *f)
{
	size_t i, b, d;

	for (d = 0; d < 2; d++)
		for (b = 0; b < 256; b++) {
			free(f->by_last[d][b]);
			f->n_by_last[d][b] = 0;
			f->by_last[d][b] =
				f->n_rules ? malloc(f->n_rules * sizeof(uint16_t)) : NULL;
			if (f->n_rules && !f->by_last[d][b])
				return false;
		}
	for (i = 0; i < f->n_rules; i++) {
		bool last[256], some = rule_last(&f->rule[i], last);

		for (d = f->rule[i].dir_only; d < 2; d++)
			for (b = 0; b < 256; b++)
				if (!some || last[b])
					f->by_last[d][b][f->n_by_last[d][b]++] = (uint16_t)i;
	}
	return true;
}

int io_filter_finish(struct io_filter *f)
{
	io__filter_paths_sort(f);
	return rules_index(f) ? 0 : rcp_err(-ENOMEM, "out of memory for the filter's rules");
}

/* glob against s of len bytes, after the literal head and tail had their say. */
static bool glob_match(const struct io__filter_rule *r, const char *s, size_t len, int flags)
{
	if (r->literal)
		return len == r->head_len && same_back(s, r->glob, len);
	if (len < r->head_len + r->tail_len || !same_back(s, r->glob, r->head_len) ||
	    !runs_in(r, s, len)) /* the tail was checked by rule_matches */
		return false;
	return fnmatch(r->glob, s, flags) == 0;
}

/* The last n components of rel (len bytes), or NULL when it has fewer. */
static const char *last_components(const char *rel, size_t len, unsigned n)
{
	while (len > 0) {
		if (rel[len - 1] == '/' && --n == 0)
			return rel + len;
		len--;
	}
	return n == 1 ? rel : NULL;
}

/* name: rel's last component (name_len bytes), found once per entry. */
static bool rule_matches(const struct io__filter_rule *r, const char *rel, size_t len,
			 const char *name, size_t name_len, bool is_dir)
{
	const char *s;

	if (r->dir_only && !is_dir)
		return false;
	/* every subject ends where rel ends: its literal tail first, before any search */
	if (len < r->tail_len || !same_back(rel + len - r->tail_len, r->tail, r->tail_len))
		return false;
	if (!r->path)
		return glob_match(r, name, name_len, 0);
	if (r->dstar) { /* the whole path, and unanchored each part after a '/' too */
		for (s = rel;; s++) {
			if (fnmatch(r->glob, s, 0) == 0)
				return true;
			if (r->anchored || !(s = strchr(s, '/')))
				return false;
		}
	}
	s = r->anchored ? rel : last_components(rel, len, r->slashes + 1);
	return s && glob_match(r, s, len - (size_t)(s - rel), FNM_PATHNAME);
}

bool io_filter_excluded(const struct io_filter *f, const char *rel, bool is_dir)
{
	size_t i, len = strlen(rel), name_len;
	const char *name = strrchr(rel, '/');
	const uint16_t *cand;
	size_t n;

	if (!len)
		return false;
	name = name ? name + 1 : rel;
	name_len = len - (size_t)(name - rel);
	cand = f->by_last[is_dir][(unsigned char)rel[len - 1]];
	n = f->n_by_last[is_dir][(unsigned char)rel[len - 1]];
	for (i = 0; i < n; i++)
		if (rule_matches(&f->rule[cand[i]], rel, len, name, name_len, is_dir))
			return !f->rule[cand[i]].include;
	return false;
}

int io_filter_encode(const struct io_filter *f, void **buf_out, size_t *len_out)
{
	char *buf = malloc(f->bytes ? f->bytes : 1), *p = buf;
	size_t i, n;

	if (!buf)
		return rcp_err(-ENOMEM, "out of memory encoding the filter");
	for (i = 0; i < f->n_rules; i++) {
		n = strlen(f->rule[i].text);
		*p++ = f->rule[i].include ? '+' : '-';
		memcpy(p, f->rule[i].text, n + 1);
		p += n + 1;
	}
	for (i = 0; i < f->n_paths; i++) {
		n = strlen(f->path[i]);
		*p++ = 'f';
		memcpy(p, f->path[i], n + 1);
		p += n + 1;
	}
	*buf_out = buf;
	*len_out = (size_t)(p - buf);
	return 0;
}

/* One record of len bytes (its NUL not counted) into f. */
static int decode_record(struct io_filter *f, const char *rec, size_t len)
{
	if (len < 2)
		return rcp_err(-EBADMSG, "the peer's filter has an empty record");
	if (rec[0] == '+' || rec[0] == '-')
		return io_filter_rule(f, rec[0] == '+', rec + 1);
	if (rec[0] == 'f')
		return io_filter_path(f, rec + 1);
	return rcp_err(-EBADMSG, "the peer's filter has a record of unknown kind");
}

int io_filter_decode(const void *buf, size_t len, struct io_filter **f_out)
{
	const char *p = buf, *end = p + len, *nul;
	struct io_filter *f = NULL;
	int err;

	if (len > IO_FILTER_MAX_BYTES)
		return rcp_err(-EFBIG, "the peer's filter is larger than %d MiB",
			       IO_FILTER_MAX_BYTES >> 20);
	if ((err = io_filter_create(&f)) != 0)
		return err;
	while (!err && p < end) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul) {
			err = rcp_err(-EBADMSG, "the peer's filter ends inside a record");
			break;
		}
		err = decode_record(f, p, (size_t)(nul - p));
		p = nul + 1;
	}
	if (!err)
		err = io_filter_finish(f);
	if (err) {
		if (err != -ENOMEM)
			err = rcp_err(-EBADMSG, "refused the client's filter: %s",
				      rcp_err_msg(err));
		io_filter_destroy(f);
		return err;
	}
	*f_out = f;
	return 0;
}
