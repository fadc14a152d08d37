# tools/plot draws runs' --json output as a PNG and an SVG: a bench and a
# push copy of the two-rail testbed (tests/fixtures/series_*.json, made by
# railcp bench --json and railcp FILE 127.0.0.1:DST --json in tools/testbed/boot),
# one run and both overlaid. The fixtures' series keys must be the ones
# cli/series.c emits, and bench and copies must emit it. A broken input, a
# JSON with no series and a missing gnuplot each give one line and exit 1.
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 is not installed"
command -v gnuplot >/dev/null || skip "gnuplot is not installed (tools/setup installs gnuplot-nox)"
fx=tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The fixtures use the keys the code writes: a fixture of another shape would pass alone.
for key in series interval_ms rails t_ms bytes; do
	grep -q "\"$key\"" cli/series.c || fail "cli/series.c emits no \"$key\", which the fixtures use"
done
for f in cli/cmd_bench.c cli/cmd_copy.c; do
	grep -q 'cli_series_json(' "$f" || fail "$f does not emit the series"
	grep -q 'cli_series_progress' "$f" || fail "$f does not sample the series"
done
for f in "$fx"/series_bench_2rails.json "$fx"/series_copy_2rails.json; do
	python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc["series"]
assert sorted(s) == ["bytes", "interval_ms", "rails", "t_ms"], sorted(s)
assert s["rails"] == [r["name"] for r in doc["rails"]], s["rails"]
assert len(s["t_ms"]) == len(s["bytes"]) >= 2 and s["t_ms"][0] == 0
assert sum(s["bytes"][-1]) == doc["bytes"], "the last sample does not sum to the summary"
' "$f" || fail "$f is not a series as cli/series.c writes it"
done

# A PNG, an SVG, and two runs in one chart.
capture tools/plot -o "$tmp/bench.png" "$fx/series_bench_2rails.json"
[ "$rc" -eq 0 ] && [ -z "$out$err" ] || fail "tools/plot to PNG exited $rc: $out $err"
[ "$(head -c 8 "$tmp/bench.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
	fail "bench.png is not a PNG"
capture tools/plot -o "$tmp/both.svg" --label bench --label copy \
	"$fx/series_bench_2rails.json" "$fx/series_copy_2rails.json"
[ "$rc" -eq 0 ] || fail "tools/plot to SVG exited $rc: $out $err"
python3 -c '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
for want in ("bench: total", "bench: rail rxe0:1", "bench: rail rxe1:1", "copy: total",
             "copy: rail rxe0:1", "copy: rail rxe1:1"):
    assert want in titles, (want, titles)
' "$tmp/both.svg" || fail "both.svg is not an SVG with both runs' totals and rails"
echo "plot: PNG of $(wc -c <"$tmp/bench.png") bytes, SVG of two runs $(wc -c <"$tmp/both.svg") bytes"

# Bad inputs: one line naming the file, exit 1, no picture.
printf '{"bytes": 1,' >"$tmp/broken.json"
echo '{"bytes": 1, "rails": []}' >"$tmp/old.json"
for bad in broken old missing; do
	capture tools/plot -o "$tmp/$bad.png" "$tmp/$bad.json"
	[ "$rc" -eq 1 ] || fail "tools/plot of $bad.json exited $rc, not 1"
	[ -z "$out" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] ||
		fail "tools/plot of $bad.json said more than one line: $out $err"
	case "$err" in "tools/plot: $tmp/$bad.json: "*) ;; *) fail "error does not name $bad.json: $err" ;; esac
	[ ! -e "$tmp/$bad.png" ] || fail "tools/plot of $bad.json left a picture"
done
# No gnuplot on PATH: one line that says how to get it.
mkdir "$tmp/empty"
capture env PATH="$tmp/empty" tools/plot -o "$tmp/x.png" "$fx/series_bench_2rails.json"
[ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "without gnuplot: exit $rc: $err"
case "$err" in *gnuplot*tools/setup*) ;; *) fail "without gnuplot, the error does not say how to get it: $err" ;; esac
echo "plot: bad inputs and a missing gnuplot each said one line"
