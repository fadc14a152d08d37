#!/usr/bin/python3
"""Run cmocka test binaries, each in its own process with a timeout, and total them.

A binary that crashes, times out or exits non-zero without cmocka reporting a
failure still counts as one failed test, so nothing is lost silently. Prints
one closing line 'unit: N passed, N failed, N skipped' and exits non-zero on
any failure or when no test ran at all.
"""
import argparse
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument('--timeout', type=int, default=int(os.environ.get('RAILCP_TEST_TIMEOUT', 120)))
ap.add_argument('--log', help='also write the output here')
ap.add_argument('binaries', nargs='+')
args = ap.parse_args()

env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT='stdout')
totals = {'passed': 0, 'failed': 0, 'skipped': 0}
out_lines = []


def emit(line):
    print(line, flush=True)
    out_lines.append(line)


def count(pattern, text):
    m = re.search(pattern, text, re.M)
    return int(m.group(1)) if m else 0


for binary in args.binaries:
    name = os.path.basename(binary)
    try:
        p = subprocess.run([os.path.abspath(binary)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=args.timeout, text=True,
                           errors='replace')
        text, rc, why = p.stdout, p.returncode, ''
    except subprocess.TimeoutExpired as e:
        text = e.stdout or ''
        if isinstance(text, bytes):
            text = text.decode(errors='replace')
        rc, why = -1, 'timed out after %d s' % args.timeout
    for line in text.splitlines():
        emit('  ' + line)
    passed = count(r'^\[  PASSED  \] (\d+) test', text)
    failed = count(r'^\[  FAILED  \] (\d+) test', text)
    skipped = count(r'^\[  SKIPPED \] (\d+) test', text)
    if rc != 0 and failed == 0:
        why = why or ('exited with status %d' % rc if rc > 0 else 'killed by signal %d' % -rc)
        failed = 1
    if rc == 0 and passed == 0 and skipped == 0:
        why, failed = 'ran no test', 1
    totals['passed'] += passed
    totals['failed'] += failed
    totals['skipped'] += skipped
    emit('%s: %d passed, %d failed, %d skipped%s' % (name, passed, failed, skipped,
                                                     ' (' + why + ')' if why else ''))

emit('unit: %(passed)d passed, %(failed)d failed, %(skipped)d skipped' % totals)
if args.log:
    with open(args.log, 'w') as f:
        f.write('\n'.join(out_lines) + '\n')
sys.exit(1 if totals['failed'] or totals['passed'] == 0 else 0)
