/*
 * opts.c - what a command line got wrong, said from the parser's own
 * tables: an unknown option with the nearest known one (as git suggests),
 * an ambiguous abbreviation with what it could mean, and a missing value
 * named as the command's --help names it ("--topology FILE.xml").
 */
#include "cli/cli.h"

#include "common/common.h"

#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 48

static unsigned min_u(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

/* Edit distance of a and b (insert, delete, substitute, swap of neighbours). */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned d[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];

	if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
		return ~0u;
	for (i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			best = min_u(best, d[i - 1][j] + 1);
			best = min_u(best, d[i][j - 1] + 1);
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				best = min_u(best, d[i - 2][j - 2] + 1);
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL;
	unsigned d, best_d = ~0u;
	size_t i;

	for (i = 0; i < n; i++) {
		d = distance(word, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	/* Close enough to be a slip of the fingers, not another word. */
	return best && best_d <= 2 && best_d * 3 <= strlen(word) + 1 ? best : NULL;
}

/* The long name of word ("--topolgy=x": "topolgy") into buf. */
static void long_name(const char *word, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)strcspn(word + 2, "="), word + 2);
}

static int unknown_long(const char *cmd, const char *word, const struct option *opts)
{
	const char *names[128], *hit;
	char name[NAME_MAX_LEN + 1], list[512] = "";
	size_t n = 0, prefixed = 0;

	long_name(word, name, sizeof(name));
	for (; opts[n].name && n < RCP_ARRAY_SIZE(names); n++) {
		names[n] = opts[n].name;
		if (name[0] && !strncmp(opts[n].name, name, strlen(name)) &&
		    strlen(list) + strlen(opts[n].name) + 5 < sizeof(list)) {
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s--%s",
				 prefixed++ ? ", " : "", opts[n].name);
		}
	}
	if (prefixed > 1)
		return cli_usage_error(cmd, "'%s' is ambiguous: %s", word, list);
	hit = cli_nearest(name, names, n);
	if (hit)
		return cli_usage_error(cmd, "unknown option '%s': did you mean --%s?", word, hit);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}

/*
 * The name of option spelling's value in usage's text ("DIR" for "--root"
 * on the line "  --root DIR  ..."), into buf; false when it names none.
 */
static bool value_name(void (*usage)(FILE *f), const char *spelling, char *buf, size_t len)
{
	char *text = NULL, *line, *save = NULL, *p;
	size_t size = 0, n = strlen(spelling);
	FILE *f = open_memstream(&text, &size);
	bool found = false;

	if (!f)
		return false;
	usage(f);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "  -", 3))
			continue;
		if ((p = strstr(line + 2, "  ")) != NULL)
			*p = '\0'; /* the spellings and the value, not the description */
		p = strstr(line, spelling);
		if (!p || (p[n] != ' ' && p[n] != ',' && p[n] != '\0'))
			continue;
		p += n;
		while (*p == ',' || (p[0] == ' ' && p[1] == '-') || (*p == '-' && p[-1] == ' '))
			p += strcspn(p + 1, " ,") + 1; /* past the other spellings */
		if (p[0] != ' ' || !isupper((unsigned char)p[1]))
			continue;
		snprintf(buf, len, "%.*s", (int)strcspn(p + 1, " "), p + 1);
		found = true;
	}
	free(text);
	return found;
}

/* What a value named name is, in words. */
static const char *value_words(const char *name)
{
	static const struct {
		const char *name, *words;
	} known[] = {
		{"DIR", "a directory"},		{"FILE", "a file"},
		{"FILE.xml", "an XML file"},	{"N", "a number"},
		{"SEC", "a number of seconds"}, {"P", "a port number"},
		{"CMD", "a command"},		{"LIST", "a list"},
		{"ADDR", "an address"},		{"PATH", "a path"},
		{"PATTERN", "a pattern"},
	};
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(known); i++)
		if (!strcmp(known[i].name, name))
			return known[i].words;
	return "a value";
}

/* The spellings of the option with code c: "--root" (long_out) and "-e" (short_out). */
static void spellings(int c, const char *shortopts, const struct option *opts, char *long_out,
		      char *short_out, size_t len)
{
	size_t i;

	long_out[0] = short_out[0] = '\0';
	for (i = 0; opts[i].name; i++)
		if (opts[i].val == c && !opts[i].flag) {
			snprintf(long_out, len, "--%s", opts[i].name);
			break;
		}
	if (c > 0 && c < 128 && isalpha(c) && strchr(shortopts, c))
		snprintf(short_out, len, "-%c", c);
}

/* "--root needs a directory (--root DIR)" into buf. */
static void needs(int c, const char *shortopts, const struct option *opts, void (*usage)(FILE *f),
		  char *buf, size_t len)
{
	char l[64], s[64], v[64];
	const char *shown;

	spellings(c, shortopts, opts, l, s, sizeof(l));
	shown = l[0] ? l : s;
	if ((l[0] && value_name(usage, l, v, sizeof(v))) ||
	    (s[0] && value_name(usage, s, v, sizeof(v))))
		snprintf(buf, len, "%s needs %s (%s %s)", shown, value_words(v), shown, v);
	else
		snprintf(buf, len, "%s needs a value", shown);
}

int cli_opt_error(const char *cmd, int c, const char *word, const char *shortopts,
		  const struct option *opts, void (*usage)(FILE *f))
{
	char msg[256];

	if (c == ':') {
		needs(optopt, shortopts, opts, usage, msg, sizeof(msg));
		return cli_usage_error(cmd, "%s", msg);
	}
	if (word[0] == '-' && word[1] == '-' && !optopt)
		return unknown_long(cmd, word, opts);
	if (word[0] == '-' && word[1] == '-') { /* a value given to an option that takes none */
		char name[NAME_MAX_LEN + 1];

		long_name(word, name, sizeof(name));
		return cli_usage_error(cmd, "--%s takes no value", name);
	}
	if (optopt && optopt < 128 && isprint(optopt))
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return cli_usage_error(cmd, "unknown option '%s'", word);
}

bool cli_opt_is_option(const char *arg, const char *shortopts, const struct option *opts)
{
	char name[NAME_MAX_LEN + 1];
	size_t i;

	if (arg[0] != '-')
		return false;
	if (arg[1] != '-')
		return isalpha((unsigned char)arg[1]) && !arg[2] && strchr(shortopts, arg[1]);
	long_name(arg, name, sizeof(name));
	for (i = 0; opts[i].name; i++)
		if (!strcmp(opts[i].name, name))
			return true;
	return false;
}

int cli_opt_taken(const char *cmd, int c, const char *arg, const char *shortopts,
		  const struct option *opts, void (*usage)(FILE *f))
{
	char msg[256];

	needs(c, shortopts, opts, usage, msg, sizeof(msg));
	return cli_usage_error(cmd, "%s, not the option '%s'", msg, arg);
}
