# Shell helpers of the GPU experiment scripts (tools/gpu-ci-path.sh, tools/gpu-outside.sh):
# source it, do not run it.
edit() {  # edit FILE OLD NEW: replace one exact snippet, or stop the step
  python3 - "$@" <<'PY'
import sys
from pathlib import Path
p, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
s = p.read_text()
assert s.count(old) == 1, f"{p}: snippet not found once: {old!r}"
p.write_text(s.replace(old, new))
PY
}
stamp() {  # each line of stdin with the seconds since the step began
  python3 -u -c 'import sys, time
t0 = time.time()
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.1f} {line}")'
}
pack() {  # pack OUTDIR: with PACK=1, every file but summary.txt into OUTDIR/steps.tgz (a lent
  # machine returns a few files a call: round 19 lost two step reports to that limit)
  [ -n "${PACK:-}" ] || return 0
  (cd "$1" && find . -type f ! -name summary.txt ! -name steps.tgz | tar czf steps.tgz -T - &&
    find . -type f ! -name summary.txt ! -name steps.tgz -delete)
}
