#!/usr/bin/env python3
"""verify/coverage.py — how much of Liger's benchmark data the reference
program covers: the kernel families with a reference (kernelindex-ref
--coverage), and the speed rows of the data whose kernel and pass it
measures, per family and in all.

Usage: verify/coverage.py path/to/kernelindex-ref [all_benchmark_data.csv]
(default: tests/data/liger/all_benchmark_data.csv beside this script)."""
import collections
import csv
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        here, '..', 'tests', 'data', 'liger', 'all_benchmark_data.csv')
    table = json.loads(subprocess.run([sys.argv[1], '--coverage'],
                                      capture_output=True, text=True,
                                      check=True).stdout)
    rows = collections.Counter()
    covered = collections.Counter()
    with open(path, newline='') as f:
        for r in csv.DictReader(f):
            if r['metric_name'] != 'speed':
                continue
            k = r['kernel_name']
            rows[k] += 1
            if r['kernel_operation_mode'] in table.get(k, ()):
                covered[k] += 1
    for k in sorted(rows):
        print('%-34s %5d of %5d%s' % (k, covered[k], rows[k],
                                      '' if k in table else '  (no reference)'))
    with_rows = [k for k in table if rows[k]]
    total, cov = sum(rows.values()), sum(covered.values())
    print('families with a reference: %d (%d of the data\'s %d kernel '
          'families)' % (len(table), len(with_rows), len(rows)))
    print('speed rows covered: %d of %d (%.1f%%)' % (cov, total,
                                                   100.0 * cov / total))


if __name__ == '__main__':
    main()
