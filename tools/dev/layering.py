#!/usr/bin/env python3
"""tools/dev/layering.py - check that every C file includes only what its layer may see.

The design's rule: cli -> engine -> {io, topology} -> common, and inside
engine/: session -> datapath -> transport, each layer using the one public
header of the layers below it (its private *_int.h headers stay inside).
verbs and rdma_cm headers only in engine/transport/; hwloc and libnuma only
in topology/. Run by SConstruct on every build; also usable by hand:
tools/dev/layering.py [ROOT]. Prints one line per violation, exits 1 if any.
"""
import os
import re
import sys

# folder -> project headers it may include (a trailing / allows the whole folder)
ALLOWED = {
    'common/': ['common/'],
    'io/': ['common/', 'io/'],
    'topology/': ['common/', 'topology/'],
    'engine/transport/': ['common/', 'topology/topology.h', 'engine/engine.h',
                          'engine/transport/'],
    'engine/datapath/': ['common/', 'topology/topology.h', 'io/io.h', 'engine/engine.h',
                         'engine/transport/transport.h', 'engine/datapath/'],
    'engine/session/': ['common/', 'topology/topology.h', 'io/io.h', 'engine/engine.h',
                        'engine/transport/transport.h', 'engine/datapath/datapath.h',
                        'engine/session/'],
    'engine/': ['common/', 'topology/topology.h'],  # engine.h itself
    'cli/': ['common/', 'topology/topology.h', 'io/io.h', 'engine/engine.h', 'cli/'],
}
# system headers only these folders may include
SYSTEM = {
    'infiniband/': ['engine/transport/'],
    'rdma/': ['engine/transport/'],
    'hwloc': ['topology/'],
    'numa.h': ['topology/'],
    'numaif.h': ['topology/'],
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def folder_of(path):
    best = None
    for f in ALLOWED:
        if path.startswith(f) and (best is None or len(f) > len(best)):
            best = f
    return best


def check_file(root, path):
    folder = folder_of(path)
    bad = []
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as fh:
        for n, line in enumerate(fh, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, inc = m.groups()
            for prefix, where in SYSTEM.items():
                if inc.startswith(prefix) and not any(path.startswith(w) for w in where):
                    bad.append('%s:%d: includes <%s>, which only %s may use'
                               % (path, n, inc, ' and '.join(where)))
            if kind == '"' and '/' in inc and folder and not any(
                    inc == a or (a.endswith('/') and inc.startswith(a)) for a in ALLOWED[folder]):
                bad.append('%s:%d: includes "%s", which %s may not see (layers: cli -> engine '
                           '-> {io, topology}; session -> datapath -> transport)'
                           % (path, n, inc, folder))
    return bad


def check(root):
    bad = []
    for top in ('common', 'io', 'topology', 'engine', 'cli'):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(('.c', '.h')):
                    bad += check_file(root, os.path.relpath(os.path.join(dirpath, name), root))
    return bad


if __name__ == '__main__':
    problems = check(sys.argv[1] if len(sys.argv) > 1 else
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    for p in problems:
        print('layering: ' + p)
    sys.exit(1 if problems else 0)
