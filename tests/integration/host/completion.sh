# dist/bash-completion/railcp: what TAB offers after a line, asked of the
# completion function as bash asks it (COMP_WORDS, COMP_CWORD, COMP_LINE,
# COMP_POINT), with $RAILCP first on PATH as railcp. The options offered
# must be the ones that build's --help lists, and no others.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. tests/integration/lib.sh
bc=/usr/share/bash-completion/bash_completion
[ -r "$bc" ] || skip "bash-completion is not installed (apt-get install bash-completion)"
# Not the user's own ~/.bash_completion, which it would source too.
BASH_COMPLETION_USER_FILE=/dev/null
# shellcheck source=/dev/null
. "$bc"

local_rsh=$PWD/tests/integration/local_rsh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/work" "$tmp/data/bash-completion/completions"

# Loaded as bash-completion loads an installed file: by the command's name,
# from a directory of $XDG_DATA_DIRS, inside a function.
cp dist/bash-completion/railcp "$tmp/data/bash-completion/completions/railcp"
BASH_COMPLETION_USER_DIR=$tmp/none XDG_DATA_DIRS=$tmp/data __load_completion railcp || fail "bash-completion did not load railcp's file"
spec=$(complete -p railcp) || fail "the file registers no completion for railcp"
func=$(sed -n 's/.*-F \([^ ]*\).*/\1/p' <<<"$spec")
[ -n "$func" ] || fail "no completion function in: $spec"
ln -s "$RAILCP" "$tmp/bin/railcp"
PATH=$tmp/bin:$PATH

# Complete $1 at its end into COMPREPLY, splitting the line into words as
# readline does (at blanks, and with ':' and '=' words of their own).
complete_line() {
	local line=$1 w='' c i
	COMP_LINE=$line COMP_POINT=${#line} COMP_WORDS=()
	for ((i = 0; i < ${#line}; i++)); do
		c=${line:i:1}
		case $c in
		' ') [ -n "$w" ] && COMP_WORDS+=("$w"); w= ;;
		[:=]) [ -n "$w" ] && COMP_WORDS+=("$w"); COMP_WORDS+=("$c"); w= ;;
		*) w+=$c ;;
		esac
	done
	[[ -n $w || $line == *' ' ]] && COMP_WORDS+=("$w")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"$func" railcp "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}

offered() { printf '%s\n' "${COMPREPLY[@]}" | grep -qxF -- "$1"; }
expect() {
	complete_line "$1"
	offered "$2" || fail "'$1' TAB: expected '$2' among: ${COMPREPLY[*]}"
}
expect_not() {
	complete_line "$1"
	offered "$2" && fail "'$1' TAB: '$2' offered, but it should not be: ${COMPREPLY[*]}"
	return 0
}
expect_none() {
	complete_line "$1"
	[ ${#COMPREPLY[@]} -eq 0 ] || fail "'$1' TAB: expected nothing, got: ${COMPREPLY[*]}"
}

cd "$tmp/work" || fail "cannot enter $tmp/work"
for c in devices topo bench serve doctor; do
	expect "railcp " "$c"
done
expect "railcp to" topo
expect_not "railcp to" serve
expect "railcp serve --" --root
expect "railcp serve --r" --root
expect "railcp serve --" --key-file
expect "railcp serve " --max-sessions
expect "railcp serve --no-d" --no-direct
expect "railcp --" --recursive
expect "railcp -" -r
expect "railcp --p" --partial
expect "railcp -r --del" --delete
expect "railcp -v --" --no-fsync
expect "railcp topo --" --save-profile
expect "railcp bench host --" --bytes
expect "railcp devices --" --json
expect "railcp doctor --" --json
expect "railcp doctor host --" --key-file
expect_not "railcp doctor --" --bytes

# --help is in each command's --help, so it is offered too.
expect "railcp serve --" --help

# Options the parser knows but --help does not list, or another command's.
expect_not "railcp bench --" --root
expect_not "railcp devices --" --bytes
expect "railcp --" --fsync
# Every option is offered: the global ones with the copy's, -q and -v after
# every command too, bench's --port.
expect "railcp --" --help-copy
expect "railcp --" --version
expect "railcp serve -" -v
expect "railcp devices -" -q
expect "railcp topo -" -vv
expect "railcp bench host --" --port
# After an option of copies the line is a copy: no command names.
expect_not "railcp -r " devices
expect_not "railcp --partial -p " serve
expect "railcp -v " devices
expect "railcp -q -v " topo
expect_not "railcp --" --max-sessions

# Copy arguments: local paths, before or after options, as source and as
# destination; a remote path completes nothing when the far side cannot be
# listed (RAILCP_RSH=false: as ssh to a host that does not answer).
export RAILCP_RSH=false
mkdir datadir
: >data-file.bin
: >other
expect "railcp dat" data-file.bin
expect "railcp -r -p --chunk 4M da" datadir
expect "railcp --key-file k srv:dir ./dat" ./data-file.bin
expect_not "railcp dat" other
: >srv:data
expect_none "railcp srv:dat"
expect "railcp ./srv:d" data # readline replaces only what follows the last ':'
expect_none "railcp data-file.bin srv:da"

# A remote path lists the far side through the remote shell, as a copy over
# ssh reads it: relative to the home there, or absolute (tests/integration/
# local_rsh runs the listing here, as ssh would on the host).
RAILCP_RSH=$local_rsh
mkdir -p "$tmp/far/sub dir" "$tmp/far/.hid"
: >"$tmp/far/file one"
expect "railcp data-file.bin h:$tmp/far/f" "$tmp/far/file\\ one "
expect "railcp data-file.bin ann@h:$tmp/far/s" "$tmp/far/sub\\ dir/"
expect "railcp -r h:$tmp/far/." "$tmp/far/.hid/" # hidden names, as the shell globs them
expect_none "railcp h:$tmp/far/none"
(cd "$tmp/far" && HOME=$tmp/far && export HOME && expect "railcp h:fi" "file\\ one ") || exit 1
# A host that begins with '-' is never handed to the remote shell (ssh would read an option).
expect_none "railcp data-file.bin ann@-oh:$tmp/far/f"
export RAILCP_RSH=false

# Option values: directories for DIR, files for FILE, nothing for a number;
# a value is not taken for the command.
expect "railcp serve --root d" datadir
expect_not "railcp serve --root d" data-file.bin
expect "railcp serve --root=d" datadir
expect "railcp serve --key-file d" data-file.bin
expect "railcp --key-file d" data-file.bin
expect "railcp --profile d" data-file.bin
: >machine.xml
expect "railcp topo --topology m" machine.xml
expect "railcp topo --topology d" datadir
expect_not "railcp topo --topology d" data-file.bin
expect_none "railcp serve --port "
expect_none "railcp --chunk "
expect "railcp --key-file devices --" --recursive

# Rails and NUMA nodes from sysfs (a made-up one here).
mkdir -p "$tmp/sys/class/infiniband/mlx5_0/ports/1" "$tmp/sys/class/infiniband/mlx5_1/ports/1" \
	"$tmp/sys/devices/system/node/node0" "$tmp/sys/devices/system/node/node1"
_railcp_sys=$tmp/sys
expect "railcp serve --rails " mlx5_0:1
expect "railcp serve --rails ml" mlx5_1:1
expect "railcp --rails mlx5_0:1,ml" 1,mlx5_1:1
expect "railcp topo --numa 0," 0,1
expect "railcp --transport t" tcp
expect "railcp serve --transport " auto
expect "railcp devices --" --transport
expect "railcp devices --transport r" rdma

# The options are read from the program on PATH when first needed, once per
# command: a railcp that documents other options gets those.
mkdir "$tmp/stub"
PATH=$tmp/stub:$PATH
cat >"$tmp/stub/railcp" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/calls"
case "\$*" in
"serve --help") printf '  --made-up-option N  a value\n  --other-option     none\n' ;;
"--help") printf 'commands:\n  serve      serve\n' ;;
esac
EOF
chmod +x "$tmp/stub/railcp"
expect "railcp serve --" --made-up-option
expect_not "railcp serve --" --root
expect_none "railcp serve --made-up-option "
expect "railcp serve --made-up-option 3 --" --other-option
[ "$(grep -c 'serve --help' "$tmp/calls")" -eq 1 ] ||
	fail "expected railcp serve --help to be run once, the calls were: $(cat "$tmp/calls")"
echo "completion: commands, options from --help, values and local paths as expected"
