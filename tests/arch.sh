#!/bin/sh
# tests/arch.sh — the layout's rules, checked with grep, wc, awk and nm:
#  1. no source file (.c .h .cu .py .js .mjs) passes 1,500 lines;
#  2. each folder includes only the folders below it: lib/ nothing of
#     ours; physics/ and store/ lib/; api/ lib/, physics/, store/; server/
#     lib/ and api/ (never store/); verify/ lib/ and physics/; harness/ is
#     linked by cli/ and the tests only;
#  3. no include cycle between files: a.c (or a.h) includes b.h while
#     b.c (or b.h) includes a.h, directly or through a longer loop;
#  4. where the objects are built (make check's directory), no cycle
#     between object files: a.o uses a symbol of b.o while b.o uses one
#     of a.o (through a shared header such as cli/cli.h, say).
# Prints each breach and exits 1 when there is one. Usage: tests/arch.sh
# [SRCDIR [BUILDDIR]]; make check runs it with KI_SRCDIR set.
top=${1:-${KI_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}}
build=$(cd "${2:-.}" 2>/dev/null && pwd)
max=1500
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

cd "$top" || exit 1

# The project's sources: everything but build trees, dependencies and
# generated files.
find . \( -name .git -o -name node_modules -o -name autom4te.cache \
    -o -name build -o -name m4 -o -name build-aux \) -prune -o -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.py' \
    -o -name '*.js' -o -name '*.mjs' \) -print | sed 's|^\./||' | sort \
    >"$tmp/files"

# 1. Length.
while IFS= read -r f; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$max" ]; then
		echo "FAIL length: $f has $n lines (at most $max)"
		fail=1
	fi
done <"$tmp/files"

# The include lines of the C sources: "file included".
grep -E '\.(c|h|cu)$' "$tmp/files" >"$tmp/csrc"
while IFS= read -r f; do
	sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*|\1|p' \
	    "$f" | while IFS= read -r inc; do
		echo "$f $inc"
	done
done <"$tmp/csrc" >"$tmp/includes"

# 2. Folders by dependency: folder, the folders it may include.
cat >"$tmp/allowed" <<'EOF'
lib lib
physics lib physics
store lib store
api lib physics store api
server lib api server
verify lib physics verify
EOF
awk 'NR == FNR {
	for (i = 2; i <= NF; i++) {
		ok[$1 " " $i] = 1;
		may[$1] = may[$1] (i > 2 ? ", " : "") $i "/";
	}
	next;
}
{
	split($1, a, "/"); split($2, b, "/");
	if (!(a[1] in may) || index($2, "/") == 0)
		next;
	if (!((a[1] " " b[1]) in ok)) {
		printf "FAIL layering: %s includes %s (%s/ may include %s only)\n",
		    $1, $2, a[1], may[a[1]];
		bad = 1;
	}
}
END { exit bad }' "$tmp/allowed" "$tmp/includes" || fail=1

# 3. Include cycles between modules (a file's path without its extension:
# a.c, a.h and its internal header a_int.h are one module).
awk '{
	m = $1; sub(/\.[a-z]+$/, "", m); sub(/_int$/, "", m);
	n = $2; sub(/\.h$/, "", n); sub(/_int$/, "", n);
	if (m != n)
		print m, n;
}' "$tmp/includes" | sort -u >"$tmp/edges"
cycles() {
	awk '{ succ[$1] = succ[$1] " " $2; node[$1] = 1; node[$2] = 1 }
	function visit(v,    k, n, w, i, s, path) {
		state[v] = 1; stack[++depth] = v;
		n = split(succ[v], w, " ");
		for (k = 1; k <= n; k++) {
			if (state[w[k]] == 1) {
				s = "";
				for (i = depth; i >= 1; i--) {
					s = stack[i] " -> " s;
					if (stack[i] == w[k])
						break;
				}
				printf "FAIL cycle (%s): %s%s\n", what, s, w[k];
				bad = 1;
			} else if (state[w[k]] == 0) {
				visit(w[k]);
			}
		}
		depth--; state[v] = 2;
	}
	END {
		for (v in node)
			if (state[v] == 0)
				visit(v);
		exit bad;
	}' what="$1" "$2"
}
cycles includes "$tmp/edges" || fail=1

# 4. Symbol cycles between the object files of our folders, when built.
if [ -d "$build" ] && command -v nm >/dev/null 2>&1; then
	: >"$tmp/defs"
	: >"$tmp/uses"
	for d in lib physics store api server cli harness verify; do
		for o in "$build/$d"/*.o; do
			[ -f "$o" ] || continue
			b=$(basename "$o" .o)
			# Objects of sources that are gone are stale.
			[ -f "$d/$b.c" ] || [ -f "$d/$b.cu" ] || continue
			nm "$o" 2>/dev/null | awk -v m="$d/$b" \
			    '$2 ~ /^[TDBRC]$/ { print $3, m >> "'"$tmp/defs"'" }
			    $1 == "U" { print m, $2 >> "'"$tmp/uses"'" }'
		done
	done
	sort -u "$tmp/defs" >"$tmp/defs.s"
	awk 'NR == FNR { def[$1] = $2; next }
	    ($2 in def) && def[$2] != $1 { print $1, def[$2] }' \
	    "$tmp/defs.s" "$tmp/uses" | sort -u >"$tmp/symedges"
	cycles symbols "$tmp/symedges" || fail=1
fi

if [ "$fail" -eq 0 ]; then
	echo "ok: no file over $max lines, folders by dependency, no cycle"
fi
exit "$fail"
